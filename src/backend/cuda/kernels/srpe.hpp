#pragma once
// SRPE on the device: the rotate-half pairs (j, j + dh/2) of every head turned
// and scaled by the fp32 tables c = r·cos Θ, s = r·sin Θ of the row's position
// (the model computes the angles in fp64 on the host; SPEC "SRPE"); with
// `interleaved`, the pairs (2j, 2j + 1) (Wiola 13M's spiral RoPE tables).
#include "backend/cuda/runtime.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda::kernels {

// y = R(p) x (transpose = false) or Rᵀ(p) x (true, the backward pass), x and y
// [N, heads·head_dim] in the compute dtype, y may be x. positions I32 [N, 1];
// cos_tab, sin_tab fp32 [P, head_dim/2]. A position outside [0, P) gives NaN.
void srpe_apply(const Tensor& x, const Tensor& positions, const Tensor& cos_tab,
                const Tensor& sin_tab, int head_dim, bool interleaved, bool transpose,
                const Tensor& y, Stream s);

}  // namespace wiola::cuda::kernels
