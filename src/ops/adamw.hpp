#pragma once
// One AdamW step, element by element, with the arithmetic done in double and
// the state stored back in T.
#include <cmath>
#include <cstdint>

#include "ops/parallel.hpp"

namespace wiola::ops {

struct AdamWStep {
  double lr, beta1, beta2, eps, weight_decay, grad_scale;
  long step;  // 1-based
};

// g = grad · grad_scale; m = β1 m + (1−β1) g; v = β2 v + (1−β2) g²;
// param −= lr · (m̂ / (sqrt(v̂) + eps) + wd · param) with the bias-corrected
// m̂ = m / (1 − β1^step), v̂ = v / (1 − β2^step).
template <class T>
void adamw_step(const AdamWStep& h, std::int64_t rows, std::int64_t cols, T* param,
                std::int64_t ldp, const T* grad, std::int64_t ldg, T* m, std::int64_t ldm, T* v,
                std::int64_t ldv) {
  const double bc1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
  const double bc2 = 1.0 - std::pow(h.beta2, static_cast<double>(h.step));
  for_each_block(rows, cols, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const double g = static_cast<double>(grad[r * ldg + c]) * h.grad_scale;
      const double mv = h.beta1 * static_cast<double>(m[r * ldm + c]) + (1.0 - h.beta1) * g;
      const double vv = h.beta2 * static_cast<double>(v[r * ldv + c]) + (1.0 - h.beta2) * g * g;
      const double p = static_cast<double>(param[r * ldp + c]);
      const double update = (mv / bc1) / (std::sqrt(vv / bc2) + h.eps) + h.weight_decay * p;
      m[r * ldm + c] = static_cast<T>(mv);
      v[r * ldv + c] = static_cast<T>(vv);
      param[r * ldp + c] = static_cast<T>(p - h.lr * update);
    }
  });
}

}  // namespace wiola::ops
