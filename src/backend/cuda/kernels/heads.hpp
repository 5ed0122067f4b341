#pragma once
// Per-head maps of x [N, heads·head_dim] on the device (Wiola 13M's gate):
// the mean over the heads and a per-(row, head) scale, forward and backward.
// Storage bf16 or fp32 (one dtype per call), arithmetic and sums in fp32, each
// sum by one thread in a fixed order: deterministic, no atomics.
#include "backend/cuda/runtime.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda::kernels {

// y [N, head_dim] = (1/heads) Σ_h x[:, h·head_dim + j]
void head_mean_fwd(const Tensor& x, int head_dim, const Tensor& y, Stream s);
// dx[:, h·head_dim + j] (=, or += when accumulate) dy[:, j] / heads
void head_mean_bwd(const Tensor& dy, int head_dim, const Tensor& dx, bool accumulate, Stream s);
// y[:, h·head_dim + j] = s[:, h] · x[:, h·head_dim + j]  (y may be x)
void head_scale_fwd(const Tensor& x, const Tensor& scale, int head_dim, const Tensor& y,
                    Stream s);
// ds[:, h] = Σ_j dy·x over head h; dx = s · dy (dx may be dy)
void head_scale_bwd(const Tensor& x, const Tensor& scale, const Tensor& dy, int head_dim,
                    const Tensor& dx, const Tensor& ds, Stream s);

}  // namespace wiola::cuda::kernels
