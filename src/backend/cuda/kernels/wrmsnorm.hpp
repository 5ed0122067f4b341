#pragma once
// WRMSNorm on the device: z = x + δ, y = γ ⊙ z · r, r = 1/sqrt(mean(z²) + eps),
// with every statistic and reduction in fp32 (rstd and the parameter
// gradients are fp32 tensors; x, γ, δ, y, dy, dx the compute dtype). An
// undefined δ (and ddelta) is plain RMSNorm.
#include <cstdint>

#include "backend/cuda/runtime.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda::kernels {

// Rows per partial sum of dgamma/ddelta (fixed: the reduction order, and so
// the bits, do not depend on the device).
inline constexpr std::int64_t kNormRowChunk = 32;
// Columns each thread keeps in registers, and the most threads per row block
// (the backward kernel needs ~96 registers a thread): rows up to 4096 wide.
inline constexpr std::int64_t kNormPerThread = 8;
inline constexpr int kNormMaxThreads = 512;
inline constexpr std::int64_t kNormMaxCols = kNormMaxThreads * kNormPerThread;

// fp32 scratch the backward pass needs: 2·d partial sums per row chunk.
inline std::int64_t wrmsnorm_bwd_scratch(std::int64_t n, std::int64_t d) {
  return (n + kNormRowChunk - 1) / kNormRowChunk * 2 * d;
}

void wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta, double eps,
                  const Tensor& y, const Tensor& rstd, Stream s);
// sum = x + r (rounded to the dtype), then the norm of sum, in one kernel.
void add_wrmsnorm_fwd(const Tensor& x, const Tensor& r, const Tensor& gamma, const Tensor& delta,
                      double eps, const Tensor& sum, const Tensor& y, const Tensor& rstd,
                      Stream s);
// dx = (or += when accumulate) ∂/∂x; dgamma += Σ dy ⊙ z r and ddelta += Σ dz
// over the rows, summed in two fixed passes (per row chunk, then the chunks in
// order): deterministic. `scratch` holds wrmsnorm_bwd_scratch(n, d) floats.
void wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta, const Tensor& rstd,
                  const Tensor& dy, const Tensor& dx, bool accumulate, const Tensor& dgamma,
                  const Tensor& ddelta, float* scratch, Stream s);

}  // namespace wiola::cuda::kernels
