// CudaBackend: the GCLA attention core, forward and backward. The checks here
// cover shapes and dtypes (kernels/attention.hpp has the algorithm). The
// index tensors' values live on the device and are not read here: the
// kernels clamp them, so a bad value gives wrong numbers, never a read outside
// a tensor (the CPU backend validates every index value).
#include <cstdint>
#include <string>
#include <string_view>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_checks.hpp"
#include "backend/cuda/kernels/attention.hpp"

namespace wiola::cuda {

namespace {

// Checks the inputs shared by forward and backward; returns the compute dtype.
DType check_inputs(std::string_view op, const AttentionDims& d, const Tensor& q, const Tensor& k,
                   const Tensor& v, std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v,
                   const Tensor& phi, const AttentionIndex& index) {
  require(d.batch >= 0 && d.seq > 0 && d.heads > 0 && d.kv_heads > 0 && d.head_dim > 0, op,
          ": bad dims batch=", d.batch, " seq=", d.seq, " heads=", d.heads,
          " kv_heads=", d.kv_heads, " head_dim=", d.head_dim);
  require(d.head_dim <= kernels::kAttentionMaxHeadDim, op, ": head_dim ", d.head_dim,
          " is more than the CUDA kernels' ", kernels::kAttentionMaxHeadDim);
  require(d.batch <= 65535 && d.heads <= 65535, op, ": batch ", d.batch, " and heads ", d.heads,
          " must each be at most 65535 (grid dimensions)");
  const std::int64_t n = static_cast<std::int64_t>(d.batch) * d.seq;
  require(n <= INT32_MAX / 2, op, ": ", n, " query rows is too many for 32-bit row indices");
  const std::int64_t qw = static_cast<std::int64_t>(d.heads) * d.head_dim;
  const std::int64_t kw = static_cast<std::int64_t>(d.kv_heads) * d.head_dim;
  const DType dt = compute_dtype(op, "q", q);
  check_exact(op, "q", q, dt, n, qw);
  check_exact(op, "k", k, dt, n, kw);
  check_exact(op, "v", v, dt, n, kw);
  require(ctx_k.size() <= static_cast<std::size_t>(kernels::kAttentionMaxContexts), op, ": ",
          ctx_k.size(), " context summaries, the CUDA kernels take at most ",
          kernels::kAttentionMaxContexts);
  require(ctx_v.size() == ctx_k.size(), op, ": ", ctx_k.size(), " ctx_k tensors but ",
          ctx_v.size(), " ctx_v tensors");
  for (std::size_t c = 0; c < ctx_k.size(); ++c) {
    const std::string ck = "ctx_k[" + std::to_string(c) + "]";
    const std::string cv = "ctx_v[" + std::to_string(c) + "]";
    check_exact(op, ck, ctx_k[c], dt, ctx_k[c].rows(), kw);
    check_exact(op, cv, ctx_v[c], dt, ctx_k[c].rows(), kw);
    require(d.batch == 0 || ctx_k[c].rows() > 0, op, ": ", ck, " has no rows");
    require(ctx_k[c].rows() <= INT32_MAX, op, ": ", ck, " has too many rows");
  }
  if (!ctx_k.empty()) check_exact(op, "phi", phi, dt, 1, 1);  // no context: β is not used
  check_index(op, "n_queries", index.n_queries, d.batch);
  check_index(op, "key_prefix", index.key_prefix, n);
  check_index(op, "key_extra", index.key_extra, n);
  check_index(op, "ctx_row", index.ctx_row, n);
  return dt;
}

}  // namespace

void CudaBackend::attention_fwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                                const Tensor& v, std::span<const Tensor> ctx_k,
                                std::span<const Tensor> ctx_v, const Tensor& phi,
                                const AttentionIndex& index, const Tensor& o,
                                const Tensor& o_self, const Tensor& o_ctx,
                                const Tensor& lse_self, const Tensor& lse_ctx) {
  const char* op = "attention_fwd";
  const DType dt = check_inputs(op, dims, q, k, v, ctx_k, ctx_v, phi, index);
  const std::int64_t n = q.rows();
  const bool ctx = !ctx_k.empty();
  check_exact(op, "o", o, dt, n, q.cols());
  check_exact(op, "o_self", o_self, dt, n, q.cols());
  if (ctx) check_exact(op, "o_ctx", o_ctx, dt, n, q.cols());
  check_f32(op, "lse_self", lse_self, n, dims.heads);
  if (ctx) check_f32(op, "lse_ctx", lse_ctx, n, dims.heads);
  kernels::attention_fwd(dims, q, k, v, ctx_k, ctx_v, phi, index, o, o_self, o_ctx, lse_self,
                         lse_ctx, stream_);
}

void CudaBackend::attention_bwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
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
  check_exact(op, "o_self", o_self, dt, n, q.cols());
  if (ctx) check_exact(op, "o_ctx", o_ctx, dt, n, q.cols());
  check_f32(op, "lse_self", lse_self, n, dims.heads);
  if (ctx) check_f32(op, "lse_ctx", lse_ctx, n, dims.heads);
  check_exact(op, "d_o", d_o, dt, n, q.cols());
  check_exact(op, "dq", dq, dt, n, q.cols());
  check_exact(op, "dk", dk, dt, n, k.cols());
  check_exact(op, "dv", dv, dt, n, v.cols());
  require(dctx_k.size() == ctx_k.size() && dctx_v.size() == ctx_k.size(), op, ": ",
          ctx_k.size(), " context summaries but ", dctx_k.size(), " dctx_k and ", dctx_v.size(),
          " dctx_v tensors");
  for (std::size_t c = 0; c < ctx_k.size(); ++c) {
    check_exact(op, "dctx_k[" + std::to_string(c) + "]", dctx_k[c], dt, ctx_k[c].rows(),
                ctx_k[c].cols());
    check_exact(op, "dctx_v[" + std::to_string(c) + "]", dctx_v[c], dt, ctx_v[c].rows(),
                ctx_v[c].cols());
  }
  if (ctx) check_f32(op, "dphi", dphi, 1, 1);
  kernels::attention_bwd(
      dims, q, k, v, ctx_k, ctx_v, phi, index, o_self, o_ctx, lse_self, lse_ctx, d_o, dq, dk, dv,
      dctx_k, dctx_v, dphi,
      [this](DType dtype, std::int64_t rows, std::int64_t cols) { return alloc(dtype, rows, cols); },
      stream_);
}

}  // namespace wiola::cuda
