// CpuBackend: the GCLA attention core. The checks here cover every index a
// kernel will follow, so the kernels never read out of bounds (the Backend
// front has checked shapes and dtypes).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/cpu_checks.hpp"
#include "ops/activations.hpp"
#include "ops/attention.hpp"

namespace wiola {

using namespace cpu;

namespace {

// The limit of the kernel and every index it will follow (the Backend front
// has checked shapes and dtypes).
void check_indices(std::string_view op, const AttentionDims& d, std::span<const Tensor> ctx_k,
                   const AttentionIndex& index) {
  require(ctx_k.size() <= ops::kMaxAttentionContexts, op, ": ", ctx_k.size(),
          " context summaries, more than the ", ops::kMaxAttentionContexts, " the kernel holds");
  std::int64_t ctx_rows = INT64_MAX;
  for (const Tensor& c : ctx_k) ctx_rows = std::min(ctx_rows, c.rows());
  for (std::int64_t b = 0; b < d.batch; ++b) {
    const std::int64_t nq = index_at(index.n_queries, b);
    require(nq >= 0 && nq <= d.seq, op, ": n_queries[", b, "] = ", nq, " is outside [0, ", d.seq,
            "]");
    for (std::int64_t t = 0; t < nq; ++t) {  // padding rows are never read
      const std::int64_t i = b * d.seq + t;
      const std::int64_t prefix = index_at(index.key_prefix, i);
      const std::int64_t extra = index_at(index.key_extra, i);
      const std::int64_t row = index_at(index.ctx_row, i);
      require(prefix >= 0 && prefix <= d.seq, op, ": key_prefix[", i, "] = ", prefix,
              " is outside [0, ", d.seq, "]");
      require(extra >= -1 && extra < d.seq, op, ": key_extra[", i, "] = ", extra,
              " is outside [-1, ", d.seq, ")");
      require(prefix > 0 || extra >= 0, op, ": query row ", i, " (sequence ", b, ", row ", t,
              ") sees no key (key_prefix 0, key_extra -1)");
      require(ctx_k.empty() || (row >= 0 && row < ctx_rows), op, ": ctx_row[", i, "] = ", row,
              " is outside the context tensors' rows [0, ", ctx_rows, ")");
    }
  }
}

template <class T>
ops::AttentionArgs<T> make_args(const AttentionDims& d, const Tensor& q, const Tensor& k,
                                const Tensor& v, std::span<const Tensor> ctx_k,
                                std::span<const Tensor> ctx_v, const Tensor& phi,
                                const AttentionIndex& index) {
  ops::AttentionArgs<T> a;
  a.batch = d.batch;
  a.seq = d.seq;
  a.heads = d.heads;
  a.kv_heads = d.kv_heads;
  a.head_dim = d.head_dim;
  a.q = q.ptr<T>();
  a.ldq = q.ld();
  a.k = k.ptr<T>();
  a.ldk = k.ld();
  a.v = v.ptr<T>();
  a.ldv = v.ld();
  for (std::size_t c = 0; c < ctx_k.size(); ++c) {
    a.ctx_k.push_back(ctx_k[c].ptr<T>());
    a.ld_ctx_k.push_back(ctx_k[c].ld());
    a.ctx_v.push_back(ctx_v[c].ptr<T>());
    a.ld_ctx_v.push_back(ctx_v[c].ld());
  }
  a.beta = ctx_k.empty() ? T(0) : ops::sigmoid(phi.ptr<T>()[0]);
  a.n_queries = index.n_queries.ptr<std::int32_t>();
  a.ld_nq = index.n_queries.ld();
  a.key_prefix = index.key_prefix.ptr<std::int32_t>();
  a.ld_kp = index.key_prefix.ld();
  a.key_extra = index.key_extra.ptr<std::int32_t>();
  a.ld_ke = index.key_extra.ld();
  a.ctx_row = index.ctx_row.ptr<std::int32_t>();
  a.ld_cr = index.ctx_row.ld();
  return a;
}

}  // namespace

void CpuBackend::do_attention_fwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                                  const Tensor& v, std::span<const Tensor> ctx_k,
                                  std::span<const Tensor> ctx_v, const Tensor& phi,
                                  const AttentionIndex& index, const Tensor& o,
                                  const Tensor& o_self, const Tensor& o_ctx, const Tensor& lse_self,
                                  const Tensor& lse_ctx) {
  check_indices("attention_fwd", dims, ctx_k, index);
  const bool ctx = !ctx_k.empty();
  dispatch(q.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const ops::AttentionOutputs<T> out{o.ptr<T>(),
                                       o.ld(),
                                       o_self.ptr<T>(),
                                       o_self.ld(),
                                       ctx ? o_ctx.ptr<T>() : nullptr,
                                       o_ctx.ld(),
                                       lse_self.ptr<T>(),
                                       lse_self.ld(),
                                       ctx ? lse_ctx.ptr<T>() : nullptr,
                                       lse_ctx.ld()};
    ops::attention_fwd(make_args<T>(dims, q, k, v, ctx_k, ctx_v, phi, index), out);
  });
}

void CpuBackend::do_attention_bwd(
    const AttentionDims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
    std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v, const Tensor& phi,
    const AttentionIndex& index, const Tensor& o_self, const Tensor& o_ctx, const Tensor& lse_self,
    const Tensor& lse_ctx, const Tensor& d_o, const Tensor& dq, const Tensor& dk, const Tensor& dv,
    std::span<const Tensor> dctx_k, std::span<const Tensor> dctx_v, const Tensor& dphi) {
  check_indices("attention_bwd", dims, ctx_k, index);
  const bool ctx = !ctx_k.empty();
  dispatch(q.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const ops::AttentionSaved<T> saved{
        o_self.ptr<T>(),   o_self.ld(),   ctx ? o_ctx.ptr<T>() : nullptr,   o_ctx.ld(),
        lse_self.ptr<T>(), lse_self.ld(), ctx ? lse_ctx.ptr<T>() : nullptr, lse_ctx.ld(),
        d_o.ptr<T>(),      d_o.ld()};
    ops::AttentionGrads<T> grads;
    grads.dq = dq.ptr<T>();
    grads.lddq = dq.ld();
    grads.dk = dk.ptr<T>();
    grads.lddk = dk.ld();
    grads.dv = dv.ptr<T>();
    grads.lddv = dv.ld();
    for (std::size_t c = 0; c < ctx_k.size(); ++c) {
      grads.dctx_k.push_back(dctx_k[c].ptr<T>());
      grads.ld_dctx_k.push_back(dctx_k[c].ld());
      grads.dctx_v.push_back(dctx_v[c].ptr<T>());
      grads.ld_dctx_v.push_back(dctx_v[c].ld());
      grads.ctx_rows.push_back(ctx_k[c].rows());
    }
    const double dphi_add =
        ops::attention_bwd(make_args<T>(dims, q, k, v, ctx_k, ctx_v, phi, index), saved, grads);
    if (!ctx) return;
    T* dp = dphi.ptr<T>();
    dp[0] = static_cast<T>(static_cast<double>(dp[0]) + dphi_add);
  });
}

}  // namespace wiola
