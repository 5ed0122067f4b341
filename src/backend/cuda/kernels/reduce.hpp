#pragma once
// Sums into an F64 [1, 1] accumulator on the device: acc += Σ x or Σ x².
// Deterministic: fixed chunks of kSumChunk elements are summed by one block
// each (in a fixed tree order, in double), then the partial sums in order by
// one block, so the result does not depend on the device or launch shape.
#include "backend/cuda/runtime.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda::kernels {

inline constexpr std::int64_t kSumChunk = 4096;

// `partials` has room for ceil(numel / kSumChunk) doubles (device memory).
void sum(const Tensor& x, bool squares, double* acc, double* partials, Stream s);

}  // namespace wiola::cuda::kernels
