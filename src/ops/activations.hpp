#pragma once
// Gates and activations, element by element on [n, c] views: σ-gating, SwiGLU's
// SiLU product, exact (erf) GELU and the DSFF fusion. Backward kernels write
// their outputs; an output may be the same view as an input. The loops are
// the vectorised kernels of kernels_impl.hpp (exp and erf of simd.hpp).
#include <cmath>
#include <cstdint>

#include "ops/kernels.hpp"

namespace wiola::ops {

// σ(x) without overflow: exp is only taken of a non-positive number (a
// scalar for the host side, e.g. β = σ(φ); the kernels use simd.hpp's).
template <class T>
inline T sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

// y = σ(g) ⊙ x
template <class T>
void sigmoid_mul_fwd(std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* x,
                     std::int64_t ldx, T* y, std::int64_t ldy) {
  kernel_set<T>().sigmoid_mul_fwd(n, c, g, ldg, x, ldx, y, ldy);
}

// dg = dy ⊙ x ⊙ σ(1 − σ), dx = dy ⊙ σ
template <class T>
void sigmoid_mul_bwd(std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* x,
                     std::int64_t ldx, const T* dy, std::int64_t lddy, T* dg, std::int64_t lddg,
                     T* dx, std::int64_t lddx) {
  kernel_set<T>().sigmoid_mul_bwd(n, c, g, ldg, x, ldx, dy, lddy, dg, lddg, dx, lddx);
}

// y = SiLU(g) ⊙ u with SiLU(g) = g σ(g)
template <class T>
void silu_mul_fwd(std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* u,
                  std::int64_t ldu, T* y, std::int64_t ldy) {
  kernel_set<T>().silu_mul_fwd(n, c, g, ldg, u, ldu, y, ldy);
}

// SiLU'(g) = σ(g) (1 + g (1 − σ(g))); dg = dy ⊙ u ⊙ SiLU'(g), du = dy ⊙ SiLU(g)
template <class T>
void silu_mul_bwd(std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* u,
                  std::int64_t ldu, const T* dy, std::int64_t lddy, T* dg, std::int64_t lddg,
                  T* du, std::int64_t lddu) {
  kernel_set<T>().silu_mul_bwd(n, c, g, ldg, u, ldu, dy, lddy, dg, lddg, du, lddu);
}

// GELU(x) = x Φ(x), Φ(x) = (1 + erf(x/√2)) / 2
template <class T>
void gelu_fwd(std::int64_t n, std::int64_t c, const T* x, std::int64_t ldx, T* y,
              std::int64_t ldy) {
  kernel_set<T>().gelu_fwd(n, c, x, ldx, y, ldy);
}

// GELU'(x) = Φ(x) + x φ(x), φ(x) = exp(−x²/2) / √(2π)
template <class T>
void gelu_bwd(std::int64_t n, std::int64_t c, const T* x, std::int64_t ldx, const T* dy,
              std::int64_t lddy, T* dx, std::int64_t lddx) {
  kernel_set<T>().gelu_bwd(n, c, x, ldx, dy, lddy, dx, lddx);
}

// DSFF fusion: α = σ(logits), out = α ⊙ a + (1 − α) ⊙ b
template <class T>
void fusion_fwd(std::int64_t n, std::int64_t c, const T* logits, std::int64_t ldl, const T* a,
                std::int64_t lda, const T* b, std::int64_t ldb, T* out, std::int64_t ldo) {
  kernel_set<T>().fusion_fwd(n, c, logits, ldl, a, lda, b, ldb, out, ldo);
}

// dlogits = dout ⊙ (a − b) ⊙ α(1 − α), da = dout ⊙ α, db = dout ⊙ (1 − α)
template <class T>
void fusion_bwd(std::int64_t n, std::int64_t c, const T* logits, std::int64_t ldl, const T* a,
                std::int64_t lda, const T* b, std::int64_t ldb, const T* dout, std::int64_t lddo,
                T* dlogits, std::int64_t lddl, T* da, std::int64_t ldda, T* db,
                std::int64_t lddb) {
  kernel_set<T>().fusion_bwd(n, c, logits, ldl, a, lda, b, ldb, dout, lddo, dlogits, lddl, da,
                             ldda, db, lddb);
}

}  // namespace wiola::ops
