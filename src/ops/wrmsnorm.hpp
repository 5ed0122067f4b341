#pragma once
// WRMSNorm: z = x + δ, y = γ ⊙ z · r with r = 1/sqrt(mean(z²) + eps). The
// statistics are summed in double (vectorised in kernels_impl.hpp; the
// parameter gradients by fixed chunks of 64 rows, so the reduction order
// does not depend on the thread count).
#include <cstdint>

#include "ops/kernels.hpp"

namespace wiola::ops {

template <class T>
void wrmsnorm_fwd(std::int64_t n, std::int64_t d, const T* x, std::int64_t ldx, const T* gamma,
                  const T* delta, double eps, T* y, std::int64_t ldy, T* rstd,
                  std::int64_t ldr) {
  kernel_set<T>().wrmsnorm_fwd(n, d, x, ldx, gamma, delta, eps, y, ldy, rstd, ldr);
}

// With g_j = γ_j dy_j:  dz_j = r g_j − z_j r³ (Σ_k g_k z_k) / d.
// dx (=, or += when accumulate) dz; dgamma += Σ_rows dy ⊙ z r; ddelta += Σ_rows dz.
template <class T>
void wrmsnorm_bwd(std::int64_t n, std::int64_t d, const T* x, std::int64_t ldx, const T* gamma,
                  const T* delta, const T* rstd, std::int64_t ldr, const T* dy,
                  std::int64_t lddy, T* dx, std::int64_t lddx, bool accumulate, T* dgamma,
                  T* ddelta) {
  kernel_set<T>().wrmsnorm_bwd(n, d, x, ldx, gamma, delta, rstd, ldr, dy, lddy, dx, lddx,
                               accumulate, dgamma, ddelta);
}

}  // namespace wiola::ops
