// CpuBackend: the GCLA attention core. The checks here cover shapes, dtypes and
// every index a kernel will follow, so the kernels never read out of bounds.
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

// Checks the inputs shared by forward and backward; returns the dtype.
DType check_inputs(std::string_view op, const AttentionDims& d, const Tensor& q, const Tensor& k,
                   const Tensor& v, std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v,
                   const Tensor& phi, const AttentionIndex& index) {
  require(d.batch >= 0 && d.seq > 0 && d.heads > 0 && d.kv_heads > 0 && d.head_dim > 0, op,
          ": bad dims batch=", d.batch, " seq=", d.seq, " heads=", d.heads,
          " kv_heads=", d.kv_heads, " head_dim=", d.head_dim);
  const std::int64_t n = static_cast<std::int64_t>(d.batch) * d.seq;
  const std::int64_t qw = static_cast<std::int64_t>(d.heads) * d.head_dim;
  const std::int64_t kw = static_cast<std::int64_t>(d.kv_heads) * d.head_dim;
  const DType dt = float_dtype(op, "q", q);
  check_float(op, "q", q, dt, n, qw);
  check_float(op, "k", k, dt, n, kw);
  check_float(op, "v", v, dt, n, kw);
  require(ctx_v.size() == ctx_k.size(), op, ": ", ctx_k.size(), " ctx_k tensors but ",
          ctx_v.size(), " ctx_v tensors");
  require(ctx_k.size() <= ops::kMaxAttentionContexts, op, ": ", ctx_k.size(),
          " context summaries, more than the ", ops::kMaxAttentionContexts, " the kernel holds");
  std::int64_t ctx_rows = INT64_MAX;
  for (std::size_t c = 0; c < ctx_k.size(); ++c) {
    const std::string ck = "ctx_k[" + std::to_string(c) + "]";
    const std::string cv = "ctx_v[" + std::to_string(c) + "]";
    check_float(op, ck, ctx_k[c], dt, ctx_k[c].rows(), kw);
    check_float(op, cv, ctx_v[c], dt, ctx_k[c].rows(), kw);
    ctx_rows = std::min(ctx_rows, ctx_k[c].rows());
  }
  if (!ctx_k.empty()) check_float(op, "phi", phi, dt, 1, 1);  // no context: β is not used

  check_index(op, "n_queries", index.n_queries, d.batch);
  check_index(op, "key_prefix", index.key_prefix, n);
  check_index(op, "key_extra", index.key_extra, n);
  check_index(op, "ctx_row", index.ctx_row, n);
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
  return dt;
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

void CpuBackend::attention_fwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                               const Tensor& v, std::span<const Tensor> ctx_k,
                               std::span<const Tensor> ctx_v, const Tensor& phi,
                               const AttentionIndex& index, const Tensor& o,
                               const Tensor& o_self, const Tensor& o_ctx, const Tensor& lse_self,
                               const Tensor& lse_ctx) {
  const char* op = "attention_fwd";
  const DType dt = check_inputs(op, dims, q, k, v, ctx_k, ctx_v, phi, index);
  const std::int64_t n = q.rows();
  const bool ctx = !ctx_k.empty();
  check_float(op, "o", o, dt, n, q.cols());
  check_float(op, "o_self", o_self, dt, n, q.cols());
  if (ctx) check_float(op, "o_ctx", o_ctx, dt, n, q.cols());
  check_float(op, "lse_self", lse_self, dt, n, dims.heads);
  if (ctx) check_float(op, "lse_ctx", lse_ctx, dt, n, dims.heads);
  dispatch(dt, [&](auto zero) {
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

void CpuBackend::attention_bwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                               const Tensor& v, std::span<const Tensor> ctx_k,
                               std::span<const Tensor> ctx_v, const Tensor& phi,
                               const AttentionIndex& index, const Tensor& o_self,
                               const Tensor& o_ctx, const Tensor& lse_self,
                               const Tensor& lse_ctx, const Tensor& d_o, const Tensor& dq,
                               const Tensor& dk, const Tensor& dv,
                               std::span<const Tensor> dctx_k, std::span<const Tensor> dctx_v,
                               const Tensor& dphi) {
  const char* op = "attention_bwd";
  const DType dt = check_inputs(op, dims, q, k, v, ctx_k, ctx_v, phi, index);
  const std::int64_t n = q.rows();
  const bool ctx = !ctx_k.empty();
  check_float(op, "o_self", o_self, dt, n, q.cols());
  if (ctx) check_float(op, "o_ctx", o_ctx, dt, n, q.cols());
  check_float(op, "lse_self", lse_self, dt, n, dims.heads);
  if (ctx) check_float(op, "lse_ctx", lse_ctx, dt, n, dims.heads);
  check_float(op, "d_o", d_o, dt, n, q.cols());
  check_float(op, "dq", dq, dt, n, q.cols());
  check_float(op, "dk", dk, dt, n, k.cols());
  check_float(op, "dv", dv, dt, n, v.cols());
  require(dctx_k.size() == ctx_k.size() && dctx_v.size() == ctx_k.size(), op, ": ",
          ctx_k.size(), " context summaries but ", dctx_k.size(), " dctx_k and ", dctx_v.size(),
          " dctx_v tensors");
  for (std::size_t c = 0; c < ctx_k.size(); ++c) {
    check_float(op, "dctx_k[" + std::to_string(c) + "]", dctx_k[c], dt, ctx_k[c].rows(),
                ctx_k[c].cols());
    check_float(op, "dctx_v[" + std::to_string(c) + "]", dctx_v[c], dt, ctx_v[c].rows(),
                ctx_v[c].cols());
  }
  if (ctx) check_float(op, "dphi", dphi, dt, 1, 1);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    const ops::AttentionSaved<T> saved{o_self.ptr<T>(),
                                       o_self.ld(),
                                       ctx ? o_ctx.ptr<T>() : nullptr,
                                       o_ctx.ld(),
                                       lse_self.ptr<T>(),
                                       lse_self.ld(),
                                       ctx ? lse_ctx.ptr<T>() : nullptr,
                                       lse_ctx.ld(),
                                       d_o.ptr<T>(),
                                       d_o.ld()};
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
