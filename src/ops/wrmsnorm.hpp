#pragma once
// WRMSNorm: z = x + δ, y = γ ⊙ z · r with r = 1/sqrt(mean(z²) + eps).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/parallel.hpp"

namespace wiola::ops {

// Rows per partial sum of the parameter gradients. Fixed, so the reduction
// order does not depend on the thread count.
inline constexpr std::int64_t kNormRowChunk = 64;

template <class T>
void wrmsnorm_fwd(std::int64_t n, std::int64_t d, const T* x, std::int64_t ldx, const T* gamma,
                  const T* delta, double eps, T* y, std::int64_t ldy, T* rstd,
                  std::int64_t ldr) {
  for_each_row(n, d, [&](std::int64_t i) {
    const T* xi = x + i * ldx;
    T* yi = y + i * ldy;
    double ss = 0.0;
    for (std::int64_t j = 0; j < d; ++j) {
      const double z = static_cast<double>(xi[j] + delta[j]);
      ss += z * z;
    }
    const T r = static_cast<T>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
    for (std::int64_t j = 0; j < d; ++j) yi[j] = gamma[j] * ((xi[j] + delta[j]) * r);
    rstd[i * ldr] = r;
  });
}

// With g_j = γ_j dy_j:  dz_j = r g_j − z_j r³ (Σ_k g_k z_k) / d.
// dx (=, or += when accumulate) dz; dgamma += Σ_rows dy ⊙ z r; ddelta += Σ_rows dz.
template <class T>
void wrmsnorm_bwd(std::int64_t n, std::int64_t d, const T* x, std::int64_t ldx, const T* gamma,
                  const T* delta, const T* rstd, std::int64_t ldr, const T* dy,
                  std::int64_t lddy, T* dx, std::int64_t lddx, bool accumulate, T* dgamma,
                  T* ddelta) {
  if (n <= 0 || d <= 0) return;
  const std::int64_t nchunks = (n + kNormRowChunk - 1) / kNormRowChunk;
  // Per chunk: d partial sums for dgamma, then d for ddelta.
  std::vector<double> partial(static_cast<std::size_t>(nchunks * 2 * d), 0.0);
#pragma omp parallel for schedule(static) if (n * d >= kMinParallelWork)
  for (std::int64_t ch = 0; ch < nchunks; ++ch) {
    double* pg = partial.data() + ch * 2 * d;
    double* pd = pg + d;
    const std::int64_t i1 = std::min(n, (ch + 1) * kNormRowChunk);
    for (std::int64_t i = ch * kNormRowChunk; i < i1; ++i) {
      const T* xi = x + i * ldx;
      const T* dyi = dy + i * lddy;
      T* dxi = dx + i * lddx;
      const double r = static_cast<double>(rstd[i * ldr]);
      double dot = 0.0;
      for (std::int64_t j = 0; j < d; ++j)
        dot += static_cast<double>(gamma[j]) * static_cast<double>(dyi[j]) *
               static_cast<double>(xi[j] + delta[j]);
      const double coef = r * r * r * dot / static_cast<double>(d);
      for (std::int64_t j = 0; j < d; ++j) {
        const double z = static_cast<double>(xi[j] + delta[j]);
        const double g = static_cast<double>(dyi[j]);
        const double dz = r * static_cast<double>(gamma[j]) * g - z * coef;
        pg[j] += g * z * r;
        pd[j] += dz;
        dxi[j] = accumulate ? static_cast<T>(dxi[j] + dz) : static_cast<T>(dz);
      }
    }
  }
#pragma omp parallel for schedule(static) if (n * d >= kMinParallelWork)
  for (std::int64_t j = 0; j < d; ++j) {
    double sg = 0.0, sd = 0.0;
    for (std::int64_t ch = 0; ch < nchunks; ++ch) {
      sg += partial[static_cast<std::size_t>(ch * 2 * d + j)];
      sd += partial[static_cast<std::size_t>(ch * 2 * d + d + j)];
    }
    dgamma[j] = static_cast<T>(dgamma[j] + sg);
    ddelta[j] = static_cast<T>(ddelta[j] + sd);
  }
}

}  // namespace wiola::ops
