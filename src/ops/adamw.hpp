#pragma once
// One AdamW step, element by element, with the arithmetic done in double and
// the state stored back in T (vectorised in kernels_impl.hpp).
#include <cstdint>

#include "ops/kernels.hpp"

namespace wiola::ops {

// g = grad · grad_scale; m = β1 m + (1−β1) g; v = β2 v + (1−β2) g²;
// param −= lr · (m̂ / (sqrt(v̂) + eps) + wd · param) with the bias-corrected
// m̂ = m / (1 − β1^step), v̂ = v / (1 − β2^step). AdamWStep: kernels.hpp.
template <class T>
void adamw_step(const AdamWStep& h, std::int64_t rows, std::int64_t cols, T* param,
                std::int64_t ldp, const T* grad, std::int64_t ldg, T* m, std::int64_t ldm, T* v,
                std::int64_t ldv) {
  kernel_set<T>().adamw_step(h, rows, cols, param, ldp, grad, ldg, m, ldm, v, ldv);
}

}  // namespace wiola::ops
