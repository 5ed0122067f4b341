#pragma once
// Gates and activations, element by element on [n, c] views: σ-gating, SwiGLU's
// SiLU product, exact (erf) GELU and the DSFF fusion. Backward kernels write
// their outputs; an output may be the same view as an input.
#include <cmath>
#include <cstdint>

#include "ops/parallel.hpp"

namespace wiola::ops {

// σ(x) without overflow: exp is only taken of a non-positive number.
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
  for_each_block(n, c, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t j = c0; j < c1; ++j) y[r * ldy + j] = sigmoid(g[r * ldg + j]) * x[r * ldx + j];
  });
}

// dg = dy ⊙ x ⊙ σ(1 − σ), dx = dy ⊙ σ
template <class T>
void sigmoid_mul_bwd(std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* x,
                     std::int64_t ldx, const T* dy, std::int64_t lddy, T* dg, std::int64_t lddg,
                     T* dx, std::int64_t lddx) {
  for_each_block(n, c, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t j = c0; j < c1; ++j) {
      const T s = sigmoid(g[r * ldg + j]);
      const T xv = x[r * ldx + j], d = dy[r * lddy + j];
      dg[r * lddg + j] = d * xv * s * (T(1) - s);
      dx[r * lddx + j] = d * s;
    }
  });
}

// y = SiLU(g) ⊙ u with SiLU(g) = g σ(g)
template <class T>
void silu_mul_fwd(std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* u,
                  std::int64_t ldu, T* y, std::int64_t ldy) {
  for_each_block(n, c, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t j = c0; j < c1; ++j) {
      const T gv = g[r * ldg + j];
      y[r * ldy + j] = gv * sigmoid(gv) * u[r * ldu + j];
    }
  });
}

// SiLU'(g) = σ(g) (1 + g (1 − σ(g))); dg = dy ⊙ u ⊙ SiLU'(g), du = dy ⊙ SiLU(g)
template <class T>
void silu_mul_bwd(std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* u,
                  std::int64_t ldu, const T* dy, std::int64_t lddy, T* dg, std::int64_t lddg,
                  T* du, std::int64_t lddu) {
  for_each_block(n, c, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t j = c0; j < c1; ++j) {
      const T gv = g[r * ldg + j], uv = u[r * ldu + j], d = dy[r * lddy + j];
      const T s = sigmoid(gv);
      dg[r * lddg + j] = d * uv * s * (T(1) + gv * (T(1) - s));
      du[r * lddu + j] = d * gv * s;
    }
  });
}

inline constexpr double kInvSqrt2 = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// GELU(x) = x Φ(x), Φ(x) = (1 + erf(x/√2)) / 2
template <class T>
void gelu_fwd(std::int64_t n, std::int64_t c, const T* x, std::int64_t ldx, T* y,
              std::int64_t ldy) {
  for_each_block(n, c, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t j = c0; j < c1; ++j) {
      const T xv = x[r * ldx + j];
      y[r * ldy + j] = xv * (T(0.5) * (T(1) + std::erf(xv * T(kInvSqrt2))));
    }
  });
}

// GELU'(x) = Φ(x) + x φ(x), φ(x) = exp(−x²/2) / √(2π)
template <class T>
void gelu_bwd(std::int64_t n, std::int64_t c, const T* x, std::int64_t ldx, const T* dy,
              std::int64_t lddy, T* dx, std::int64_t lddx) {
  for_each_block(n, c, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t j = c0; j < c1; ++j) {
      const T xv = x[r * ldx + j];
      const T cdf = T(0.5) * (T(1) + std::erf(xv * T(kInvSqrt2)));
      const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * xv * xv);
      dx[r * lddx + j] = dy[r * lddy + j] * (cdf + xv * pdf);
    }
  });
}

// DSFF fusion: α = σ(logits), out = α ⊙ a + (1 − α) ⊙ b
template <class T>
void fusion_fwd(std::int64_t n, std::int64_t c, const T* logits, std::int64_t ldl, const T* a,
                std::int64_t lda, const T* b, std::int64_t ldb, T* out, std::int64_t ldo) {
  for_each_block(n, c, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t j = c0; j < c1; ++j) {
      const T al = sigmoid(logits[r * ldl + j]);
      out[r * ldo + j] = al * a[r * lda + j] + (T(1) - al) * b[r * ldb + j];
    }
  });
}

// dlogits = dout ⊙ (a − b) ⊙ α(1 − α), da = dout ⊙ α, db = dout ⊙ (1 − α)
template <class T>
void fusion_bwd(std::int64_t n, std::int64_t c, const T* logits, std::int64_t ldl, const T* a,
                std::int64_t lda, const T* b, std::int64_t ldb, const T* dout, std::int64_t lddo,
                T* dlogits, std::int64_t lddl, T* da, std::int64_t ldda, T* db,
                std::int64_t lddb) {
  for_each_block(n, c, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t j = c0; j < c1; ++j) {
      const T al = sigmoid(logits[r * ldl + j]);
      const T av = a[r * lda + j], bv = b[r * ldb + j], d = dout[r * lddo + j];
      dlogits[r * lddl + j] = d * (av - bv) * al * (T(1) - al);
      da[r * ldda + j] = d * al;
      db[r * lddb + j] = d * (T(1) - al);
    }
  });
}

}  // namespace wiola::ops
