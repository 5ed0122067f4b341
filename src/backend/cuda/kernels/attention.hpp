#pragma once
// The GCLA attention core on the device (Backend::attention_fwd/bwd): the
// launchers behind CudaBackend, which has checked every shape and dtype.
// Compute tensors are bf16 or fp32 (one dtype per call); lse_self, lse_ctx
// and dphi are fp32; index tensors are contiguous I32. Views may be strided.
//
//   attention_fwd.cu  the fused forward (SRPE of Q and K when given, self
//                     attention, context, blend, and the output gate when
//                     given)
//   attention_bwd.cu  backward: the output gate's gradients when given,
//                     D = rowsum(dO_self ∘ O_self), dK/dV, dQ (each rotated
//                     back by SRPE when given) and the per-query context
//                     coefficients
//   attention_ctx.cu  context gradients gathered per context row, and dphi
//                     (over the buckets of attention_buckets.cuh)
// Every result is deterministic: no floating-point atomics, every sum in a
// fixed order.
#include <cstdint>
#include <functional>
#include <span>

#include "backend/backend.hpp"
#include "backend/cuda/runtime.hpp"

namespace wiola::cuda::kernels {

inline constexpr int kAttentionMaxContexts = 8;
inline constexpr int kAttentionMaxHeadDim = 128;

// Device memory for the backward pass's workspaces, not zero-filled: each
// kernel reads only what an earlier one wrote (the counters the context
// gradients count into are zeroed where they are made).
using Allocate = std::function<Tensor(DType dtype, std::int64_t rows, std::int64_t cols)>;

void attention_fwd(const AttentionDims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
                   std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v,
                   const Tensor& phi, const AttentionIndex& index, const Tensor& o,
                   const Tensor& o_self, const Tensor& o_ctx, const Tensor& lse_self,
                   const Tensor& lse_ctx, const AttentionGate& gate,
                   const AttentionRotary& rotary, Stream s);

void attention_bwd(const AttentionDims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
                   std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v,
                   const Tensor& phi, const AttentionIndex& index, const Tensor& o_self,
                   const Tensor& o_ctx, const Tensor& lse_self, const Tensor& lse_ctx,
                   const Tensor& d_o, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                   std::span<const Tensor> dctx_k, std::span<const Tensor> dctx_v,
                   const Tensor& dphi, const AttentionGateGrad& gate,
                   const AttentionRotary& rotary, const Allocate& alloc, Stream s);

}  // namespace wiola::cuda::kernels
