#pragma once
// SRPE: a position-dependent rotation-and-scaling of the pairs (j, j + dh/2)
// inside every head, [y_j; y_{j+h}] = [[c, −s], [s, c]] [x_j; x_{j+h}].
// With `interleaved` the pairs are (2j, 2j + 1) instead (Wiola 13M's spiral
// RoPE); the tables are the caller's either way.
#include <cstdint>

#include "ops/parallel.hpp"

namespace wiola::ops {

// Applies the map of each row's position to n rows of `heads` heads.
// transpose = true applies [[c, s], [−s, c]], the adjoint used by backward.
// y may be x: both members of a pair are read before either is written.
template <class T>
void srpe_apply(std::int64_t n, std::int64_t heads, std::int64_t head_dim, const T* x,
                std::int64_t ldx, const std::int32_t* pos, std::int64_t ldp, const T* cos_tab,
                std::int64_t ldc, const T* sin_tab, std::int64_t lds, bool transpose, T* y,
                std::int64_t ldy, bool interleaved = false) {
  const std::int64_t half = head_dim / 2;
  for_each_row(n, heads * head_dim, [&](std::int64_t i) {
    const std::int64_t p = pos[i * ldp];
    const T* c = cos_tab + p * ldc;
    const T* s = sin_tab + p * lds;
    const T sign = transpose ? T(-1) : T(1);
    for (std::int64_t h = 0; h < heads; ++h) {
      const T* xa = x + i * ldx + h * head_dim;
      T* ya = y + i * ldy + h * head_dim;
      if (interleaved) {
        for (std::int64_t j = 0; j < half; ++j) {
          const T a = xa[2 * j], b = xa[2 * j + 1], sj = sign * s[j];
          ya[2 * j] = a * c[j] - b * sj;
          ya[2 * j + 1] = a * sj + b * c[j];
        }
        continue;
      }
      const T* xb = xa + half;
      T* yb = ya + half;
      for (std::int64_t j = 0; j < half; ++j) {
        const T a = xa[j], b = xb[j], sj = sign * s[j];
        ya[j] = a * c[j] - b * sj;
        yb[j] = a * sj + b * c[j];
      }
    }
  });
}

template <class T>
void srpe_fwd(std::int64_t n, std::int64_t heads, std::int64_t head_dim, const T* x,
              std::int64_t ldx, const std::int32_t* pos, std::int64_t ldp, const T* cos_tab,
              std::int64_t ldc, const T* sin_tab, std::int64_t lds, T* y, std::int64_t ldy,
              bool interleaved = false) {
  srpe_apply(n, heads, head_dim, x, ldx, pos, ldp, cos_tab, ldc, sin_tab, lds, false, y, ldy,
             interleaved);
}

// dx = R(p)ᵀ dy
template <class T>
void srpe_bwd(std::int64_t n, std::int64_t heads, std::int64_t head_dim, const T* dy,
              std::int64_t lddy, const std::int32_t* pos, std::int64_t ldp, const T* cos_tab,
              std::int64_t ldc, const T* sin_tab, std::int64_t lds, T* dx, std::int64_t lddx,
              bool interleaved = false) {
  srpe_apply(n, heads, head_dim, dy, lddy, pos, ldp, cos_tab, ldc, sin_tab, lds, true, dx, lddx,
             interleaved);
}

}  // namespace wiola::ops
