#pragma once
// One AdamW step on the device (Backend::adamw_step's contract), element by
// element in double arithmetic on fp32 (or fp64) master weights and moments.
#include "backend/backend.hpp"
#include "backend/cuda/runtime.hpp"

namespace wiola::cuda::kernels {

void adamw_step(const Backend::AdamW& h, const Tensor& param, const Tensor& grad, const Tensor& m,
                const Tensor& v, Stream s);

}  // namespace wiola::cuda::kernels
