// CudaBackend: the GCLA attention core, forward and backward. The checks here
// are the kernels' limits (kernels/attention.hpp has the algorithm). The
// index tensors' values live on the device and are not read here: the
// kernels clamp them, so a bad value gives wrong numbers, never a read outside
// a tensor (the CPU backend validates every index value).
#include <cstdint>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/kernels/attention.hpp"

namespace wiola::cuda {

namespace {

// The limits of the CUDA kernels (the Backend front has checked shapes and
// dtypes).
void check_limits(const char* op, const AttentionDims& d, std::span<const Tensor> ctx_k) {
  require(d.head_dim <= kernels::kAttentionMaxHeadDim, op, ": head_dim ", d.head_dim,
          " is more than the CUDA kernels' ", kernels::kAttentionMaxHeadDim);
  require(d.batch <= 65535 && d.heads <= 65535, op, ": batch ", d.batch, " and heads ", d.heads,
          " must each be at most 65535 (grid dimensions)");
  const std::int64_t n = static_cast<std::int64_t>(d.batch) * d.seq;
  require(n <= INT32_MAX / 2, op, ": ", n, " query rows is too many for 32-bit row indices");
  require(ctx_k.size() <= static_cast<std::size_t>(kernels::kAttentionMaxContexts), op, ": ",
          ctx_k.size(), " context summaries, the CUDA kernels take at most ",
          kernels::kAttentionMaxContexts);
  for (std::size_t c = 0; c < ctx_k.size(); ++c)
    require(ctx_k[c].rows() <= INT32_MAX, op, ": ctx_k[", c, "] has too many rows");
}

}  // namespace

void CudaBackend::do_attention_fwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                                   const Tensor& v, std::span<const Tensor> ctx_k,
                                   std::span<const Tensor> ctx_v, const Tensor& phi,
                                   const AttentionIndex& index, const Tensor& o,
                                   const Tensor& o_self, const Tensor& o_ctx,
                                   const Tensor& lse_self, const Tensor& lse_ctx) {
  do_attention_fwd_fused(dims, q, k, v, ctx_k, ctx_v, phi, index, o, o_self, o_ctx, lse_self,
                         lse_ctx, AttentionGate{}, AttentionRotary{});
}

void CudaBackend::do_attention_fwd_fused(const AttentionDims& dims, const Tensor& q,
                                         const Tensor& k, const Tensor& v,
                                         std::span<const Tensor> ctx_k,
                                         std::span<const Tensor> ctx_v, const Tensor& phi,
                                         const AttentionIndex& index, const Tensor& o,
                                         const Tensor& o_self, const Tensor& o_ctx,
                                         const Tensor& lse_self, const Tensor& lse_ctx,
                                         const AttentionGate& gate,
                                         const AttentionRotary& rotary) {
  check_limits("attention_fwd", dims, ctx_k);
  kernels::attention_fwd(dims, q, k, v, ctx_k, ctx_v, phi, index, o, o_self, o_ctx, lse_self,
                         lse_ctx, gate, rotary, stream_);
}

void CudaBackend::do_attention_bwd(
    const AttentionDims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
    std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v, const Tensor& phi,
    const AttentionIndex& index, const Tensor& o_self, const Tensor& o_ctx, const Tensor& lse_self,
    const Tensor& lse_ctx, const Tensor& d_o, const Tensor& dq, const Tensor& dk, const Tensor& dv,
    std::span<const Tensor> dctx_k, std::span<const Tensor> dctx_v, const Tensor& dphi) {
  do_attention_bwd_fused(dims, q, k, v, ctx_k, ctx_v, phi, index, o_self, o_ctx, lse_self,
                         lse_ctx, d_o, dq, dk, dv, dctx_k, dctx_v, dphi, AttentionGateGrad{},
                         AttentionRotary{});
}

void CudaBackend::do_attention_bwd_fused(
    const AttentionDims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
    std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v, const Tensor& phi,
    const AttentionIndex& index, const Tensor& o_self, const Tensor& o_ctx, const Tensor& lse_self,
    const Tensor& lse_ctx, const Tensor& d_o, const Tensor& dq, const Tensor& dk, const Tensor& dv,
    std::span<const Tensor> dctx_k, std::span<const Tensor> dctx_v, const Tensor& dphi,
    const AttentionGateGrad& gate, const AttentionRotary& rotary) {
  check_limits("attention_bwd", dims, ctx_k);
  kernels::attention_bwd(
      dims, q, k, v, ctx_k, ctx_v, phi, index, o_self, o_ctx, lse_self, lse_ctx, d_o, dq, dk, dv,
      dctx_k, dctx_v, dphi, gate, rotary,
      [this](DType dtype, std::int64_t rows, std::int64_t cols) {
        return alloc_uninit(dtype, rows, cols);
      },
      stream_);
}

}  // namespace wiola::cuda
