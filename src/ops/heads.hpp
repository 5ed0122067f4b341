#pragma once
// Per-head maps of a [N, heads·head_dim] tensor (Wiola 13M's gated spiral
// attention): the mean over the heads, and scaling every head of a row by its
// own factor. Each row is independent and every sum has a fixed order, so
// results do not depend on the thread count.
#include <cstdint>

#include "ops/parallel.hpp"

namespace wiola::ops {

// y[i, j] = (1/heads) Σ_h x[i, h·dh + j], the heads added in order.
template <class T>
void head_mean_fwd(std::int64_t n, std::int64_t heads, std::int64_t dh, const T* x,
                   std::int64_t ldx, T* y, std::int64_t ldy) {
  const double inv = 1.0 / static_cast<double>(heads);
  for_each_row(n, heads * dh, [&](std::int64_t i) {
    const T* xi = x + i * ldx;
    T* yi = y + i * ldy;
    for (std::int64_t j = 0; j < dh; ++j) {
      double acc = 0.0;
      for (std::int64_t h = 0; h < heads; ++h) acc += static_cast<double>(xi[h * dh + j]);
      yi[j] = static_cast<T>(acc * inv);
    }
  });
}

// dx[i, h·dh + j] (=, or += when accumulate) dy[i, j] / heads.
template <class T>
void head_mean_bwd(std::int64_t n, std::int64_t heads, std::int64_t dh, const T* dy,
                   std::int64_t lddy, T* dx, std::int64_t lddx, bool accumulate) {
  const double inv = 1.0 / static_cast<double>(heads);
  for_each_row(n, heads * dh, [&](std::int64_t i) {
    const T* gi = dy + i * lddy;
    T* di = dx + i * lddx;
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t j = 0; j < dh; ++j) {
        const T g = static_cast<T>(static_cast<double>(gi[j]) * inv);
        di[h * dh + j] = accumulate ? static_cast<T>(di[h * dh + j] + g) : g;
      }
  });
}

// y[i, h·dh + j] = s[i, h] · x[i, h·dh + j]  (y may be x).
template <class T>
void head_scale_fwd(std::int64_t n, std::int64_t heads, std::int64_t dh, const T* x,
                    std::int64_t ldx, const T* s, std::int64_t lds, T* y, std::int64_t ldy) {
  for_each_row(n, heads * dh, [&](std::int64_t i) {
    for (std::int64_t h = 0; h < heads; ++h) {
      const T f = s[i * lds + h];
      const T* xh = x + i * ldx + h * dh;
      T* yh = y + i * ldy + h * dh;
      for (std::int64_t j = 0; j < dh; ++j) yh[j] = f * xh[j];
    }
  });
}

// ds[i, h] = Σ_j dy·x over head h (in double, in column order); then
// dx = s · dy (dx may be dy: every head's ds is summed before its dx is written).
template <class T>
void head_scale_bwd(std::int64_t n, std::int64_t heads, std::int64_t dh, const T* x,
                    std::int64_t ldx, const T* s, std::int64_t lds, const T* dy,
                    std::int64_t lddy, T* dx, std::int64_t lddx, T* ds, std::int64_t ldds) {
  for_each_row(n, heads * dh, [&](std::int64_t i) {
    for (std::int64_t h = 0; h < heads; ++h) {
      const T* xh = x + i * ldx + h * dh;
      const T* gh = dy + i * lddy + h * dh;
      T* dh_out = dx + i * lddx + h * dh;
      double acc = 0.0;
      for (std::int64_t j = 0; j < dh; ++j)
        acc += static_cast<double>(gh[j]) * static_cast<double>(xh[j]);
      const T f = s[i * lds + h];
      ds[i * ldds + h] = static_cast<T>(acc);
      for (std::int64_t j = 0; j < dh; ++j) dh_out[j] = f * gh[j];
    }
  });
}

}  // namespace wiola::ops
