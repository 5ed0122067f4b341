#pragma once
// The vectorised CPU kernels (kernels.hpp lists them), included once by each
// instruction-set file. WIOLA_SIMD_ACC, set by that file, is how many 64-byte
// accumulators its registers hold; it changes how many rows a product keeps
// in registers, never the order of any sum, so every instruction set gives
// the same bits.
//
// Everything here has internal linkage and uses no standard container (a
// std::vector method compiled for AVX-512 could otherwise be kept by the
// linker for the whole program): scratch memory comes from ScratchBuffer.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>

#include "ops/attention_args.hpp"
#include "ops/kernels.hpp"
#include "ops/parallel.hpp"
#include "ops/simd.hpp"

#ifndef WIOLA_SIMD_ACC
#error "kernels_impl.hpp is included by the instruction-set files only"
#endif

namespace wiola::ops::impl {
namespace {

using simd::bcast;
using simd::for_lanes;
using simd::hmax;
using simd::hsum;
using simd::kLanes;
using simd::load;
using simd::load_n;
using simd::mask;
using simd::mask_elem;
using simd::store;
using simd::store_n;
using simd::vec;

// 64-byte aligned scratch, freed at scope exit.
class ScratchBuffer {
 public:
  explicit ScratchBuffer(std::size_t bytes)
      : p_(::operator new(bytes < 64 ? 64 : bytes, std::align_val_t{64})) {}
  ~ScratchBuffer() { ::operator delete(p_, std::align_val_t{64}); }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_;
};

inline std::int64_t min64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }
inline std::int64_t max64(std::int64_t a, std::int64_t b) { return a > b ? a : b; }

// Scalar versions of the vector functions, through lane 0 (so a scalar gets
// exactly the rounding a vector lane would).
template <class T>
inline T exp1(T x) {
  if constexpr (sizeof(T) == sizeof(double))
    return std::exp(x);
  else
    return simd::exp(bcast(x))[0];
}

// ---- gates and activations -------------------------------------------------
// Each runs over rows and column blocks (parallel.hpp) and, inside a block,
// over whole vectors and one partial vector (for_lanes).

template <class T, class F>
void rows_blocks(std::int64_t n, std::int64_t c, F&& f) {
  for_each_block(n, c, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    for_lanes<T>(c1 - c0, [&](std::int64_t j, std::int64_t k) { f(r, c0 + j, k); });
  });
}

template <class T>
void sigmoid_mul_fwd(std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* x,
                     std::int64_t ldx, T* y, std::int64_t ldy) {
  rows_blocks<T>(n, c, [&](std::int64_t r, std::int64_t j, std::int64_t k) {
    const vec<T> s = simd::sigmoid<T>(load_n(g + r * ldg + j, k));
    store_n(y + r * ldy + j, s * load_n(x + r * ldx + j, k), k);
  });
}

template <class T>
void sigmoid_mul_bwd(std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* x,
                     std::int64_t ldx, const T* dy, std::int64_t lddy, T* dg, std::int64_t lddg,
                     T* dx, std::int64_t lddx) {
  rows_blocks<T>(n, c, [&](std::int64_t r, std::int64_t j, std::int64_t k) {
    const vec<T> s = simd::sigmoid<T>(load_n(g + r * ldg + j, k));
    const vec<T> xv = load_n(x + r * ldx + j, k), d = load_n(dy + r * lddy + j, k);
    store_n(dg + r * lddg + j, d * xv * s * (T(1) - s), k);
    store_n(dx + r * lddx + j, d * s, k);
  });
}

template <class T>
void silu_mul_fwd(std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* u,
                  std::int64_t ldu, T* y, std::int64_t ldy) {
  rows_blocks<T>(n, c, [&](std::int64_t r, std::int64_t j, std::int64_t k) {
    const vec<T> gv = load_n(g + r * ldg + j, k);
    store_n(y + r * ldy + j, gv * simd::sigmoid<T>(gv) * load_n(u + r * ldu + j, k), k);
  });
}

template <class T>
void silu_mul_bwd(std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* u,
                  std::int64_t ldu, const T* dy, std::int64_t lddy, T* dg, std::int64_t lddg,
                  T* du, std::int64_t lddu) {
  rows_blocks<T>(n, c, [&](std::int64_t r, std::int64_t j, std::int64_t k) {
    const vec<T> gv = load_n(g + r * ldg + j, k), uv = load_n(u + r * ldu + j, k),
                 d = load_n(dy + r * lddy + j, k);
    const vec<T> s = simd::sigmoid<T>(gv);
    store_n(dg + r * lddg + j, d * uv * s * (T(1) + gv * (T(1) - s)), k);
    store_n(du + r * lddu + j, d * gv * s, k);
  });
}

inline constexpr double kInvSqrt2 = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;

template <class T>
void gelu_fwd(std::int64_t n, std::int64_t c, const T* x, std::int64_t ldx, T* y,
              std::int64_t ldy) {
  rows_blocks<T>(n, c, [&](std::int64_t r, std::int64_t j, std::int64_t k) {
    const vec<T> xv = load_n(x + r * ldx + j, k);
    store_n(y + r * ldy + j, xv * (T(0.5) * (T(1) + simd::erf(xv * T(kInvSqrt2)))), k);
  });
}

template <class T>
void gelu_bwd(std::int64_t n, std::int64_t c, const T* x, std::int64_t ldx, const T* dy,
              std::int64_t lddy, T* dx, std::int64_t lddx) {
  rows_blocks<T>(n, c, [&](std::int64_t r, std::int64_t j, std::int64_t k) {
    const vec<T> xv = load_n(x + r * ldx + j, k);
    const vec<T> cdf = T(0.5) * (T(1) + simd::erf(xv * T(kInvSqrt2)));
    const vec<T> pdf = T(kInvSqrt2Pi) * simd::exp(T(-0.5) * xv * xv);
    store_n(dx + r * lddx + j, load_n(dy + r * lddy + j, k) * (cdf + xv * pdf), k);
  });
}

template <class T>
void fusion_fwd(std::int64_t n, std::int64_t c, const T* logits, std::int64_t ldl, const T* a,
                std::int64_t lda, const T* b, std::int64_t ldb, T* out, std::int64_t ldo) {
  rows_blocks<T>(n, c, [&](std::int64_t r, std::int64_t j, std::int64_t k) {
    const vec<T> al = simd::sigmoid<T>(load_n(logits + r * ldl + j, k));
    store_n(out + r * ldo + j,
            al * load_n(a + r * lda + j, k) + (T(1) - al) * load_n(b + r * ldb + j, k), k);
  });
}

template <class T>
void fusion_bwd(std::int64_t n, std::int64_t c, const T* logits, std::int64_t ldl, const T* a,
                std::int64_t lda, const T* b, std::int64_t ldb, const T* dout, std::int64_t lddo,
                T* dlogits, std::int64_t lddl, T* da, std::int64_t ldda, T* db,
                std::int64_t lddb) {
  rows_blocks<T>(n, c, [&](std::int64_t r, std::int64_t j, std::int64_t k) {
    const vec<T> al = simd::sigmoid<T>(load_n(logits + r * ldl + j, k));
    const vec<T> av = load_n(a + r * lda + j, k), bv = load_n(b + r * ldb + j, k),
                 d = load_n(dout + r * lddo + j, k);
    store_n(dlogits + r * lddl + j, d * (av - bv) * al * (T(1) - al), k);
    store_n(da + r * ldda + j, d * al, k);
    store_n(db + r * lddb + j, d * (T(1) - al), k);
  });
}

// ---- widening to double ------------------------------------------------------
// Calls f(j, count, v) with v the next kLanes<double> elements of p as doubles.
template <class T, class F>
[[gnu::always_inline]] inline void for_doubles(const T* p, std::int64_t n, F&& f) {
  constexpr int L = kLanes<double>;
  std::int64_t j = 0;
  if constexpr (sizeof(T) == sizeof(double)) {
    for (; j + L <= n; j += L) f(j, std::int64_t(L), load(p + j));
    if (j < n) f(j, n - j, simd::load_part(p + j, n - j));
  } else {
    typedef T half __attribute__((vector_size(sizeof(T) * L)));
    for (; j + L <= n; j += L) {
      half h;
      std::memcpy(&h, p + j, sizeof h);
      f(j, std::int64_t(L), __builtin_convertvector(h, vec<double>));
    }
    if (j < n) {
      half h = {};
      for (std::int64_t i = 0; i < n - j; ++i) h[i] = p[j + i];
      f(j, n - j, __builtin_convertvector(h, vec<double>));
    }
  }
}

// Stores the first `count` lanes of v (doubles) as T.
template <class T>
[[gnu::always_inline]] inline void store_doubles(T* p, vec<double> v, std::int64_t count) {
  constexpr int L = kLanes<double>;
  if constexpr (sizeof(T) == sizeof(double)) {
    store_n(p, v, count);
  } else {
    typedef T half __attribute__((vector_size(sizeof(T) * L)));
    const half h = __builtin_convertvector(v, half);
    if (count == L)
      std::memcpy(p, &h, sizeof h);
    else
      for (std::int64_t i = 0; i < count; ++i) p[i] = h[i];
  }
}

// ---- cross-entropy -------------------------------------------------------------
// The row maximum, then Σ exp(z − max) with each exponential rounded to T and
// summed in double lanes (one fixed tree), lse = max + log Σ.

template <class T>
double sum_exp_shifted(const T* z, std::int64_t vocab, T m) {
  constexpr int L = kLanes<T>;
  vec<double> acc = {};
  std::int64_t j = 0;
  T e[L];
  auto add = [&](std::int64_t count) {
    for_doubles<T>(e, count, [&](std::int64_t, std::int64_t, vec<double> v) { acc += v; });
  };
  for (; j + L <= vocab; j += L) {
    store(e, simd::exp(load(z + j) - m));
    add(L);
  }
  if (j < vocab) {
    store(e, simd::exp(simd::load_part(z + j, vocab - j) - m));
    add(vocab - j);  // lanes past the row are left out
  }
  return hsum(acc);
}

template <class T>
T row_max(const T* z, std::int64_t n) {
  constexpr int L = kLanes<T>;
  vec<T> m = bcast(z[0]);
  std::int64_t j = 0;
  for (; j + L <= n; j += L) m = simd::vmax<T>(m, load(z + j));
  T best = hmax(m);
  for (; j < n; ++j) best = z[j] > best ? z[j] : best;
  return best;
}

template <class T>
void cross_entropy_fwd(std::int64_t n, std::int64_t vocab, const T* logits, std::int64_t ldl,
                       const std::int32_t* tgt, std::int64_t ldt, T* loss, std::int64_t ldloss,
                       T* lse, std::int64_t ldlse) {
  for_each_row(n, vocab, [&](std::int64_t i) {
    const T* z = logits + i * ldl;
    const T m = row_max(z, vocab);
    const double l = static_cast<double>(m) + std::log(sum_exp_shifted(z, vocab, m));
    const std::int32_t t = tgt[i * ldt];
    lse[i * ldlse] = static_cast<T>(l);
    loss[i * ldloss] = t < 0 ? T(0) : static_cast<T>(l - static_cast<double>(z[t]));
  });
}

template <class T>
void cross_entropy_bwd(std::int64_t n, std::int64_t vocab, const T* logits, std::int64_t ldl,
                       const std::int32_t* tgt, std::int64_t ldt, const T* lse,
                       std::int64_t ldlse, T scale, T* dlogits, std::int64_t lddl) {
  for_each_row(n, vocab, [&](std::int64_t i) {
    const T* z = logits + i * ldl;
    T* dz = dlogits + i * lddl;
    const std::int32_t t = tgt[i * ldt];
    if (t < 0) {
      for (std::int64_t j = 0; j < vocab; ++j) dz[j] = T(0);
      return;
    }
    const T l = lse[i * ldlse];
    for_lanes<T>(vocab, [&](std::int64_t j, std::int64_t k) {
      store_n(dz + j, scale * simd::exp(load_n(z + j, k) - l), k);
    });
    dz[t] -= scale;
  });
}

// ---- WRMSNorm ----------------------------------------------------------------------
// Statistics in double as the reference kernels: Σ z² and Σ γ dy z by double
// lanes in one fixed tree.

template <class T>
void wrmsnorm_fwd(std::int64_t n, std::int64_t d, const T* x, std::int64_t ldx, const T* gamma,
                  const T* delta, double eps, T* y, std::int64_t ldy, T* rstd, std::int64_t ldr) {
  // One scratch row of z = x + δ per thread is not needed: z is recomputed.
  for_each_row(n, d, [&](std::int64_t i) {
    const T* xi = x + i * ldx;
    T* yi = y + i * ldy;
    constexpr int L = kLanes<T>;
    vec<double> ss = {};
    T z[L];
    for_lanes<T>(d, [&](std::int64_t j, std::int64_t k) {
      store(z, load_n(xi + j, k) + load_n(delta + j, k));  // lanes past d are 0
      for_doubles<T>(z, L, [&](std::int64_t, std::int64_t, vec<double> v) { ss += v * v; });
    });
    const T r = static_cast<T>(1.0 / std::sqrt(hsum(ss) / static_cast<double>(d) + eps));
    for_lanes<T>(d, [&](std::int64_t j, std::int64_t k) {
      const vec<T> zv = load_n(xi + j, k) + load_n(delta + j, k);
      store_n(yi + j, load_n(gamma + j, k) * (zv * r), k);
    });
    rstd[i * ldr] = r;
  });
}

inline constexpr std::int64_t kNormRowChunk = 64;

// With g_j = γ_j dy_j: dz_j = r g_j − z_j r³ (Σ_k g_k z_k) / d. Per chunk of
// kNormRowChunk rows, partial sums of dγ and dδ per column; the chunks'
// partials are then added in order.
template <class T>
void wrmsnorm_bwd(std::int64_t n, std::int64_t d, const T* x, std::int64_t ldx, const T* gamma,
                  const T* delta, const T* rstd, std::int64_t ldr, const T* dy, std::int64_t lddy,
                  T* dx, std::int64_t lddx, bool accumulate, T* dgamma, T* ddelta) {
  if (n <= 0 || d <= 0) return;
  constexpr int L = kLanes<double>;
  const std::int64_t nchunks = (n + kNormRowChunk - 1) / kNormRowChunk;
  const std::int64_t dpad = (d + L - 1) / L * L;
  ScratchBuffer partial_buf(static_cast<std::size_t>(nchunks * 2 * dpad) * sizeof(double));
  double* partial = partial_buf.as<double>();
#pragma omp parallel for schedule(static) if (n * d >= kMinParallelWork)
  for (std::int64_t ch = 0; ch < nchunks; ++ch) {
    double* pg = partial + ch * 2 * dpad;
    double* pd = pg + dpad;
    for (std::int64_t j = 0; j < 2 * dpad; ++j) pg[j] = 0.0;
    const std::int64_t i1 = min64(n, (ch + 1) * kNormRowChunk);
    T zrow[L];
    for (std::int64_t i = ch * kNormRowChunk; i < i1; ++i) {
      const T* xi = x + i * ldx;
      const T* dyi = dy + i * lddy;
      T* dxi = dx + i * lddx;
      const double r = static_cast<double>(rstd[i * ldr]);
      vec<double> dotv = {};
      for (std::int64_t j = 0; j < d; j += L) {
        const std::int64_t k = min64(L, d - j);
        for (std::int64_t t = 0; t < k; ++t) zrow[t] = xi[j + t] + delta[j + t];
        for (std::int64_t t = k; t < L; ++t) zrow[t] = T(0);
        for_doubles<T>(zrow, L, [&](std::int64_t, std::int64_t, vec<double> z) {
          for_doubles<T>(gamma + j, k, [&](std::int64_t, std::int64_t, vec<double> gm) {
            for_doubles<T>(dyi + j, k, [&](std::int64_t, std::int64_t, vec<double> g) {
              dotv += gm * g * z;
            });
          });
        });
      }
      const double coef = r * r * r * hsum(dotv) / static_cast<double>(d);
      for (std::int64_t j = 0; j < d; j += L) {
        const std::int64_t k = min64(L, d - j);
        for (std::int64_t t = 0; t < k; ++t) zrow[t] = xi[j + t] + delta[j + t];
        for (std::int64_t t = k; t < L; ++t) zrow[t] = T(0);
        for_doubles<T>(zrow, L, [&](std::int64_t, std::int64_t, vec<double> z) {
          for_doubles<T>(gamma + j, k, [&](std::int64_t, std::int64_t, vec<double> gm) {
            for_doubles<T>(dyi + j, k, [&](std::int64_t, std::int64_t, vec<double> g) {
              const vec<double> dz = r * gm * g - z * coef;
              store(pg + j, load(pg + j) + g * z * r);
              store(pd + j, load(pd + j) + dz);
              if (accumulate) {
                for_doubles<T>(dxi + j, k, [&](std::int64_t, std::int64_t, vec<double> old) {
                  // dx + dz rounded once to T, as the reference kernel
                  store_doubles(dxi + j, old + dz, k);
                });
              } else {
                store_doubles(dxi + j, dz, k);
              }
            });
          });
        });
      }
    }
  }
  for_each_block(1, d, [&](std::int64_t, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t j = c0; j < c1; ++j) {
      double sg = 0.0, sd = 0.0;
      for (std::int64_t ch = 0; ch < nchunks; ++ch) {
        sg += partial[ch * 2 * dpad + j];
        sd += partial[ch * 2 * dpad + dpad + j];
      }
      dgamma[j] = static_cast<T>(dgamma[j] + sg);
      ddelta[j] = static_cast<T>(ddelta[j] + sd);
    }
  });
}

// ---- AdamW ---------------------------------------------------------------------------
// In double lanes, as the reference: the state is read, updated and rounded
// back to T once.
template <class T>
void adamw_step(const AdamWStep& h, std::int64_t rows, std::int64_t cols, T* param,
                std::int64_t ldp, const T* grad, std::int64_t ldg, T* m, std::int64_t ldm, T* v,
                std::int64_t ldv) {
  const double bc1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
  const double bc2 = 1.0 - std::pow(h.beta2, static_cast<double>(h.step));
  for_each_block(rows, cols, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    constexpr int L = kLanes<double>;
    for (std::int64_t c = c0; c < c1; c += L) {
      const std::int64_t k = min64(L, c1 - c);
      vec<double> g, mv, vv, p;
      for_doubles<T>(grad + r * ldg + c, k, [&](std::int64_t, std::int64_t, vec<double> x) { g = x * h.grad_scale; });
      for_doubles<T>(m + r * ldm + c, k, [&](std::int64_t, std::int64_t, vec<double> x) { mv = h.beta1 * x + (1.0 - h.beta1) * g; });
      for_doubles<T>(v + r * ldv + c, k, [&](std::int64_t, std::int64_t, vec<double> x) { vv = h.beta2 * x + (1.0 - h.beta2) * g * g; });
      for_doubles<T>(param + r * ldp + c, k, [&](std::int64_t, std::int64_t, vec<double> x) { p = x; });
      vec<double> sq;
      const vec<double> vhat = vv / bc2;
      for (int t = 0; t < L; ++t) sq[t] = std::sqrt(vhat[t]);
      const vec<double> update = (mv / bc1) / (sq + h.eps) + h.weight_decay * p;
      store_doubles(m + r * ldm + c, mv, k);
      store_doubles(v + r * ldv + c, vv, k);
      store_doubles(param + r * ldp + c, p - h.lr * update, k);
    }
  });
}

// ---- attention ------------------------------------------------------------------------
// A flash-style blocked kernel (the CUDA backend's algorithm, attention_fwd.cu
// and attention_bwd.cu, on the CPU's registers): never a T x T matrix.
//
// Blocks: kBQ query rows against kBK keys (four vectors: 64 fp32, 32 fp64).
// Head dimensions are padded with zero columns to dhp, a multiple of the
// vector, and Q is scaled by 1/√dh when it is packed (S = (Q/√dh)·Kᵀ).
// Products are register-blocked in two forms, whose sums all run in a fixed
// order (over the head dimension, or over keys / query rows in ascending
// order), whatever the number of rows a pass keeps in registers:
//   scores: S[i][0:kBK] = Σ_d A[i][d] · Bᵀ[d][0:kBK]   (S = QKᵀ, dP = dO·Vᵀ)
//   accumulate: C[i][:] += Σ_k a(i, k) · B[k][:]       (O += PV, dQ += dS·K,
//               dK += dSᵀQ, dV += PᵀdO)
//
// Forward, per (sequence, head, query block), in parallel: online softmax
// over the key blocks the block's rows can see (running max m, running sum
// l, O rescaled when m moves; a row that has seen nothing yet uses 0 as its
// reference, so exp never sees −inf − (−inf)), then each row's extra key (causal
// ATM) the same way; O_self = O / l, lse_self = m + log l; the context
// softmax over the row's summaries; the β blend.
//
// Backward, per (sequence, key/value group), in parallel, as the reference
// kernel it replaces: the group's dK and dV rows belong to one thread. For
// every head of the group and query block: S, P = exp(S − lse), dP, dS = P ⊙
// (dP − D) with D = dO_self·O_self, then dV += PᵀdO_self, dK += dSᵀ(Q/√dh),
// dQ += dS·K, block after block in ascending order, then the extra keys; the
// context term of dq and the coefficients of the context-row gradients
// (scattered by attention.hpp).
//
// Key and value rows that no query of a block can see are packed as zeros,
// and masked scores are selected away, never multiplied: NaN in padding rows
// reaches no result.

template <class T>
inline constexpr int kBK = 4 * kLanes<T>;
inline constexpr int kBQ = 32;

// Rows of an accumulate-form product kept in registers for nv vectors a row.
constexpr int rows_for(int nv) { return nv >= WIOLA_SIMD_ACC ? 1 : WIOLA_SIMD_ACC / nv; }

// S[i][0:kBK] = Σ_{d < dhp} A[i·lda + d] · BT[d·kBK + 0:kBK] for i < rows.
template <class T>
void scores(int rows, int dhp, const T* A, int lda, const T* BT, T* S) {
  constexpr int L = kLanes<T>, NV = 4, RB = rows_for(NV);
  int i = 0;
  for (; i + RB <= rows; i += RB) {
    vec<T> acc[RB][NV] = {};
    for (int d = 0; d < dhp; ++d) {
      vec<T> b[NV];
      for (int v = 0; v < NV; ++v) b[v] = load(BT + d * kBK<T> + v * L);
      for (int r = 0; r < RB; ++r) {
        const vec<T> a = bcast(A[(i + r) * lda + d]);
        for (int v = 0; v < NV; ++v) acc[r][v] += a * b[v];
      }
    }
    for (int r = 0; r < RB; ++r)
      for (int v = 0; v < NV; ++v) store(S + (i + r) * kBK<T> + v * L, acc[r][v]);
  }
  for (; i < rows; ++i) {
    vec<T> acc[NV] = {};
    for (int d = 0; d < dhp; ++d) {
      const vec<T> a = bcast(A[i * lda + d]);
      for (int v = 0; v < NV; ++v) acc[v] += a * load(BT + d * kBK<T> + v * L);
    }
    for (int v = 0; v < NV; ++v) store(S + i * kBK<T> + v * L, acc[v]);
  }
}

// C[i·ldc + 0:NV·L] += Σ_{k < K} a(i, k) · B[k·ldb + 0:NV·L] for i < rows, with
// a(i, k) = A[i·lda + k], or A[k·lda + i] when TRANS.
template <class T, int NV, bool TRANS>
void accumulate(int rows, int K, const T* A, int lda, const T* B, int ldb, T* C, int ldc) {
  constexpr int L = kLanes<T>, RB = rows_for(NV);
  auto a_at = [&](int i, int k) { return TRANS ? A[k * lda + i] : A[i * lda + k]; };
  int i = 0;
  for (; i + RB <= rows; i += RB) {
    vec<T> acc[RB][NV];
    for (int r = 0; r < RB; ++r)
      for (int v = 0; v < NV; ++v) acc[r][v] = load(C + (i + r) * ldc + v * L);
    for (int k = 0; k < K; ++k) {
      vec<T> b[NV];
      for (int v = 0; v < NV; ++v) b[v] = load(B + k * ldb + v * L);
      for (int r = 0; r < RB; ++r) {
        const vec<T> a = bcast(a_at(i + r, k));
        for (int v = 0; v < NV; ++v) acc[r][v] += a * b[v];
      }
    }
    for (int r = 0; r < RB; ++r)
      for (int v = 0; v < NV; ++v) store(C + (i + r) * ldc + v * L, acc[r][v]);
  }
  for (; i < rows; ++i) {
    vec<T> acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = load(C + i * ldc + v * L);
    for (int k = 0; k < K; ++k) {
      const vec<T> a = bcast(a_at(i, k));
      for (int v = 0; v < NV; ++v) acc[v] += a * load(B + k * ldb + v * L);
    }
    for (int v = 0; v < NV; ++v) store(C + i * ldc + v * L, acc[v]);
  }
}

// The accumulate product for the padded head width dhp = nv vectors.
template <class T, bool TRANS>
void accumulate_dh(int nv, int rows, int K, const T* A, int lda, const T* B, int ldb, T* C,
                   int ldc) {
  switch (nv) {
    case 1: return accumulate<T, 1, TRANS>(rows, K, A, lda, B, ldb, C, ldc);
    case 2: return accumulate<T, 2, TRANS>(rows, K, A, lda, B, ldb, C, ldc);
    case 4: return accumulate<T, 4, TRANS>(rows, K, A, lda, B, ldb, C, ldc);
    case 6: return accumulate<T, 6, TRANS>(rows, K, A, lda, B, ldb, C, ldc);
    case 8: return accumulate<T, 8, TRANS>(rows, K, A, lda, B, ldb, C, ldc);
    default: return accumulate<T, 16, TRANS>(rows, K, A, lda, B, ldb, C, ldc);
  }
}

// Vectors per padded head row: dh rounded up to 1, 2, 4, 6, 8 or 16 vectors.
template <class T>
int head_vectors(std::int64_t dh) {
  const std::int64_t n = (dh + kLanes<T> - 1) / kLanes<T>;
  for (int nv : {1, 2, 4, 6, 8})
    if (n <= nv) return nv;
  return 16;
}

// Σ_d a[d]·b[d] over n elements, by lanes then one fixed tree (b read with
// its true length, a padded).
template <class T>
T dot(const T* a, const T* b, std::int64_t n) {
  vec<T> acc = {};
  for_lanes<T>(n, [&](std::int64_t j, std::int64_t k) { acc += load_n(a + j, k) * load_n(b + j, k); });
  return hsum(acc);
}

// Σ_d a[d]·b[d] one element after another in ascending d: the order in which
// scores() sums each dP = dO·Vᵀ. D = dO·O_self is summed this way, so that
// where O_self is exactly one value row (one visible key), dP − D is exactly
// 0 and so are dS and that key's dK, as the softmax says.
template <class T>
T dot_ascending(const T* a, const T* b, std::int64_t n) {
  T acc = T(0);
  for (std::int64_t d = 0; d < n; ++d) acc += a[d] * b[d];
  return acc;
}

// Row i of the query-side inputs, padded to dhp with zeros: dst = scale·src.
template <class T>
void pack_row(const T* src, std::int64_t dh, int dhp, T scale, T* dst) {
  for (std::int64_t d = 0; d < dh; ++d) dst[d] = scale * src[d];
  for (std::int64_t d = dh; d < dhp; ++d) dst[d] = T(0);
}

// Keys [k0, k0 + kBK) of one sequence and group: (when BT is set) transposed
// into BT [dhp][kBK] and (when R is set) row-major into R [kBK][dhp]; rows >=
// k_end are zero.
template <class T>
void pack_keys(const T* base, std::int64_t ld, std::int64_t k0, std::int64_t k_end,
               std::int64_t dh, int dhp, T* BT, T* R) {
  for (int j = 0; j < kBK<T>; ++j) {
    if (k0 + j < k_end) {
      const T* row = base + (k0 + j) * ld;
      if (BT) {
        for (std::int64_t d = 0; d < dh; ++d) BT[d * kBK<T> + j] = row[d];
        for (std::int64_t d = dh; d < dhp; ++d) BT[d * kBK<T> + j] = T(0);
      }
      if (R) {
        for (std::int64_t d = 0; d < dh; ++d) R[j * dhp + d] = row[d];
        for (std::int64_t d = dh; d < dhp; ++d) R[j * dhp + d] = T(0);
      }
    } else {
      if (BT)
        for (std::int64_t d = 0; d < dhp; ++d) BT[d * kBK<T> + j] = T(0);
      if (R)
        for (std::int64_t d = 0; d < dhp; ++d) R[j * dhp + d] = T(0);
    }
  }
}

// Row maps of one query row: the keys it sees.
struct RowKeys {
  std::int64_t prefix = 0, extra = -1;  // extra >= prefix, or −1
};

template <class T>
RowKeys row_keys(const AttentionArgs<T>& a, std::int64_t i) {
  RowKeys r;
  r.prefix = a.key_prefix[i * a.ld_kp];
  const std::int64_t e = a.key_extra[i * a.ld_ke];
  r.extra = e >= r.prefix ? e : -1;
  return r;
}

// Masks S[i][·] of keys k0.. to −inf at and past `prefix`.
template <class T>
void mask_row(T* s, std::int64_t k0, std::int64_t prefix) {
  constexpr int L = kLanes<T>;
  if (k0 + kBK<T> <= prefix) return;
  const T ninf = -std::numeric_limits<T>::infinity();
  for (int v = 0; v < 4; ++v) {
    mask<T> idx;
    for (int l = 0; l < L; ++l) idx[l] = static_cast<mask_elem<T>>(k0 + v * L + l);
    const vec<T> sv = load(s + v * L);
    store(s + v * L, idx < static_cast<mask_elem<T>>(prefix) ? sv : bcast(ninf));
  }
}

template <class T>
void attention_fwd(const AttentionArgs<T>& a, const AttentionOutputs<T>& out) {
  const std::int64_t S = a.seq, H = a.heads, G = a.kv_heads, dh = a.head_dim;
  const std::size_t nctx = a.ctx_k.size();
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
  const int nv = head_vectors<T>(dh), dhp = nv * kLanes<T>;
  const std::int64_t nqb = (S + kBQ - 1) / kBQ;
  const std::int64_t units = a.batch * H * nqb;
  const std::int64_t nkb = (S + kBK<T> - 1) / kBK<T>, spad = nkb * kBK<T>;
  const T ninf = -std::numeric_limits<T>::infinity();
  const T beta = a.beta;
  // Every (sequence, group)'s keys, packed once for all its heads and query
  // blocks: Kᵀ blocks [nkb][dhp][kBK] and V rows [spad][dhp]. Key rows no valid
  // query of the sequence sees are zeros (a query's own later keys are masked:
  // their P is exactly 0, so the packing changes no sum).
  const std::size_t group_elems = std::size_t(spad) * dhp;
  ScratchBuffer packed(static_cast<std::size_t>(a.batch * G) * group_elems * 2 * sizeof(T));
#pragma omp parallel
  {
#pragma omp for collapse(2) schedule(static)
    for (std::int64_t b = 0; b < a.batch; ++b) {
      for (std::int64_t g = 0; g < G; ++g) {
        const std::int64_t nq = a.n_queries[b * a.ld_nq];
        std::int64_t kend = 0;
        for (std::int64_t t = 0; t < nq; ++t) kend = max64(kend, row_keys(a, b * S + t).prefix);
        T* KTg = packed.as<T>() + std::size_t(b * G + g) * group_elems * 2;
        T* Vg = KTg + group_elems;
        const T* kbase = a.k + b * S * a.ldk + g * dh;
        const T* vbase = a.v + b * S * a.ldv + g * dh;
        for (std::int64_t kb = 0; kb < nkb; ++kb) {
          pack_keys(kbase, a.ldk, kb * kBK<T>, kend, dh, dhp, KTg + kb * kBK<T> * dhp,
                    static_cast<T*>(nullptr));
          pack_keys(vbase, a.ldv, kb * kBK<T>, kend, dh, dhp, static_cast<T*>(nullptr),
                    Vg + kb * kBK<T> * dhp);
        }
      }
    }

    // Q [kBQ][dhp], O [kBQ][dhp], S [kBQ][kBK], m, l [kBQ]
    const std::size_t elems = std::size_t(kBQ) * dhp * 2 + std::size_t(kBQ) * kBK<T> + 2 * kBQ;
    ScratchBuffer buf(elems * sizeof(T));
    T* Qp = buf.as<T>();
    T* Op = Qp + kBQ * dhp;
    T* Sp = Op + kBQ * dhp;
    T* mrow = Sp + kBQ * kBK<T>;
    T* lrow = mrow + kBQ;
    RowKeys keys[kBQ];
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t u = 0; u < units; ++u) {
      // Heavy blocks (late query rows see more keys) first.
      const std::int64_t qb = nqb - 1 - u % nqb;
      const std::int64_t h = (u / nqb) % H, b = u / (nqb * H), g = h % G;
      const std::int64_t nq = a.n_queries[b * a.ld_nq];
      const std::int64_t q0 = qb * kBQ, q1 = min64(S, q0 + kBQ);
      const std::int64_t live = max64(0, min64(q1, nq) - q0);  // valid rows of the block
      // Padding rows: zeros everywhere.
      for (std::int64_t t = q0 + live; t < q1; ++t) {
        const std::int64_t i = b * S + t;
        for (std::int64_t d = 0; d < dh; ++d) {
          out.o[i * out.ldo + h * dh + d] = T(0);
          out.o_self[i * out.ldos + h * dh + d] = T(0);
          if (nctx > 0) out.o_ctx[i * out.ldoc + h * dh + d] = T(0);
        }
        out.lse_self[i * out.ldls + h] = T(0);
        if (nctx > 0) out.lse_ctx[i * out.ldlc + h] = T(0);
      }
      if (live == 0) continue;

      std::int64_t kmax = 0;
      for (std::int64_t r = 0; r < live; ++r) {
        const std::int64_t i = b * S + q0 + r;
        keys[r] = row_keys(a, i);
        kmax = max64(kmax, keys[r].prefix);
        pack_row(a.q + i * a.ldq + h * dh, dh, dhp, scale, Qp + r * dhp);
        for (int d = 0; d < dhp; ++d) Op[r * dhp + d] = T(0);
        mrow[r] = ninf;
        lrow[r] = T(0);
      }
      const T* kbase = a.k + b * S * a.ldk + g * dh;
      const T* vbase = a.v + b * S * a.ldv + g * dh;
      const T* KTg = packed.as<T>() + std::size_t(b * G + g) * group_elems * 2;
      const T* Vg = KTg + group_elems;
      for (std::int64_t k0 = 0; k0 < kmax; k0 += kBK<T>) {
        const T* Vp = Vg + k0 * dhp;
        scores(static_cast<int>(live), dhp, Qp, dhp, KTg + k0 * dhp, Sp);
        for (std::int64_t r = 0; r < live; ++r) {
          T* s = Sp + r * kBK<T>;
          mask_row(s, k0, keys[r].prefix);
          vec<T> mx = load(s);
          for (int v = 1; v < 4; ++v) mx = simd::vmax<T>(mx, load(s + v * kLanes<T>));
          const T bmax = hmax(mx);
          const T m_new = bmax > mrow[r] ? bmax : mrow[r];
          const T ref = m_new == ninf ? T(0) : m_new;
          const T alpha = exp1(mrow[r] - ref);
          vec<T> p[4];
          for (int v = 0; v < 4; ++v) {
            p[v] = simd::exp(load(s + v * kLanes<T>) - ref);
            store(s + v * kLanes<T>, p[v]);
          }
          lrow[r] = lrow[r] * alpha + hsum((p[0] + p[1]) + (p[2] + p[3]));
          mrow[r] = m_new;
          if (alpha != T(1))
            for (int d = 0; d < dhp; d += kLanes<T>)
              store(Op + r * dhp + d, load(Op + r * dhp + d) * alpha);
        }
        accumulate_dh<T, false>(nv, static_cast<int>(live), kBK<T>, Sp, kBK<T>, Vp, dhp, Op, dhp);
      }
      for (std::int64_t r = 0; r < live; ++r) {
        const std::int64_t i = b * S + q0 + r;
        T* orow = Op + r * dhp;
        if (keys[r].extra >= 0) {  // the row's one extra key (causal ATM)
          const std::int64_t e = keys[r].extra;
          const T s = dot(Qp + r * dhp, kbase + e * a.ldk, dh);
          const T m_new = s > mrow[r] ? s : mrow[r];
          const T alpha = exp1(mrow[r] - m_new), p = exp1(s - m_new);
          const T* vr = vbase + e * a.ldv;
          for_lanes<T>(dh, [&](std::int64_t d, std::int64_t k) {
            store_n(orow + d, load_n(orow + d, k) * alpha + p * load_n(vr + d, k), k);
          });
          lrow[r] = lrow[r] * alpha + p;
          mrow[r] = m_new;
        }
        // O_self and its log-sum-exp.
        T* os = out.o_self + i * out.ldos + h * dh;
        const T inv = static_cast<T>(1.0 / static_cast<double>(lrow[r]));
        for_lanes<T>(dh, [&](std::int64_t d, std::int64_t k) { store_n(os + d, load_n(orow + d, k) * inv, k); });
        out.lse_self[i * out.ldls + h] =
            static_cast<T>(static_cast<double>(mrow[r]) + std::log(static_cast<double>(lrow[r])));
        if (nctx == 0) {  // no context: O = O_self (o may be o_self)
          T* o = out.o + i * out.ldo + h * dh;
          if (o != os)
            for (std::int64_t d = 0; d < dh; ++d) o[d] = os[d];
          continue;
        }

        // Context attention over the summaries.
        const std::int64_t crow = a.ctx_row[i * a.ld_cr];
        T cs[kMaxAttentionContexts];
        T mc = ninf;
        for (std::size_t c = 0; c < nctx; ++c) {
          cs[c] = dot(Qp + r * dhp, a.ctx_k[c] + crow * a.ld_ctx_k[c] + g * dh, dh);
          mc = cs[c] > mc ? cs[c] : mc;
        }
        double lc = 0.0;
        for (int d = 0; d < dhp; ++d) orow[d] = T(0);
        for (std::size_t c = 0; c < nctx; ++c) {
          const T p = exp1(cs[c] - mc);
          lc += static_cast<double>(p);
          const T* vr = a.ctx_v[c] + crow * a.ld_ctx_v[c] + g * dh;
          for_lanes<T>(dh, [&](std::int64_t d, std::int64_t k) {
            store_n(orow + d, load_n(orow + d, k) + p * load_n(vr + d, k), k);
          });
        }
        T* oc = out.o_ctx + i * out.ldoc + h * dh;
        T* o = out.o + i * out.ldo + h * dh;
        const T invc = static_cast<T>(1.0 / lc);
        for_lanes<T>(dh, [&](std::int64_t d, std::int64_t k) {
          const vec<T> ocv = load_n(orow + d, k) * invc;
          store_n(oc + d, ocv, k);
          store_n(o + d, (T(1) - beta) * load_n(os + d, k) + beta * ocv, k);
        });
        out.lse_ctx[i * out.ldlc + h] = static_cast<T>(static_cast<double>(mc) + std::log(lc));
      }
    }
  }
}

template <class T>
void attention_bwd(const AttentionArgs<T>& a, const AttentionSaved<T>& sv,
                   const AttentionGrads<T>& gr, double* dbeta_out) {
  const std::int64_t B = a.batch, S = a.seq, H = a.heads, G = a.kv_heads, dh = a.head_dim;
  const std::size_t nctx = a.ctx_k.size();
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
  const T beta = a.beta;
  const int nv = head_vectors<T>(dh), dhp = nv * kLanes<T>;
  const std::int64_t nkb = (S + kBK<T> - 1) / kBK<T>, spad = nkb * kBK<T>;
  double dbeta_total = 0.0;
  ScratchBuffer dbeta_buf(static_cast<std::size_t>(B * G) * sizeof(double));
  double* dbeta_part = dbeta_buf.as<double>();
#pragma omp parallel
  {
    // Per sequence and group: Kᵀ and Vᵀ blocks, K rows, dK, dV [spad][dhp];
    // per query block: Q, dO, dQ [kBQ][dhp], S, dP [kBQ][kBK], lse, D.
    const std::size_t seq_elems = std::size_t(spad) * dhp * 5;
    const std::size_t blk_elems = std::size_t(kBQ) * dhp * 3 + std::size_t(kBQ) * kBK<T> * 2 + 2 * kBQ;
    ScratchBuffer buf((seq_elems + blk_elems) * sizeof(T));
    T* KT = buf.as<T>();
    T* VT = KT + spad * dhp;
    T* Kr = VT + spad * dhp;
    T* dK = Kr + spad * dhp;
    T* dV = dK + spad * dhp;
    T* Qp = dV + spad * dhp;
    T* dOp = Qp + kBQ * dhp;
    T* dQ = dOp + kBQ * dhp;
    T* Sp = dQ + kBQ * dhp;
    T* dP = Sp + kBQ * kBK<T>;
    T* lse = dP + kBQ * kBK<T>;
    T* Dr = lse + kBQ;
    RowKeys keys[kBQ];
#pragma omp for collapse(2) schedule(dynamic, 1)
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t g = 0; g < G; ++g) {
        const std::int64_t nq = a.n_queries[b * a.ld_nq];
        // Key rows any valid query of the sequence sees.
        std::int64_t kend = 0;
        for (std::int64_t t = 0; t < nq; ++t) {
          const RowKeys rk = row_keys(a, b * S + t);
          kend = max64(kend, max64(rk.prefix, rk.extra + 1));
        }
        const T* kbase = a.k + b * S * a.ldk + g * dh;
        const T* vbase = a.v + b * S * a.ldv + g * dh;
        for (std::int64_t kb = 0; kb < nkb; ++kb) {
          pack_keys(kbase, a.ldk, kb * kBK<T>, kend, dh, dhp, KT + kb * kBK<T> * dhp,
                    Kr + kb * kBK<T> * dhp);
          pack_keys(vbase, a.ldv, kb * kBK<T>, kend, dh, dhp, VT + kb * kBK<T> * dhp,
                    static_cast<T*>(nullptr));
        }
        for (std::int64_t e = 0; e < spad * dhp; ++e) dK[e] = dV[e] = T(0);
        double dbeta = 0.0;
        for (std::int64_t h = g; h < H; h += G) {
          for (std::int64_t q0 = 0; q0 < S; q0 += kBQ) {
            const std::int64_t q1 = min64(S, q0 + kBQ);
            const std::int64_t live = max64(0, min64(q1, nq) - q0);
            for (std::int64_t t = q0 + live; t < q1; ++t)  // padding rows: no gradient
              for (std::int64_t d = 0; d < dh; ++d) gr.dq[(b * S + t) * gr.lddq + h * dh + d] = T(0);
            if (live == 0) continue;
            std::int64_t kmax = 0;
            for (std::int64_t r = 0; r < live; ++r) {
              const std::int64_t i = b * S + q0 + r;
              keys[r] = row_keys(a, i);
              kmax = max64(kmax, keys[r].prefix);
              pack_row(a.q + i * a.ldq + h * dh, dh, dhp, scale, Qp + r * dhp);
              const T* d_o = sv.d_o + i * sv.lddo + h * dh;
              const T* os = sv.o_self + i * sv.ldos + h * dh;
              if (nctx > 0) {  // no context: β, O_ctx not read
                const T* oc = sv.o_ctx + i * sv.ldoc + h * dh;
                for (std::int64_t d = 0; d < dh; ++d)
                  dbeta += static_cast<double>(d_o[d]) *
                           (static_cast<double>(oc[d]) - static_cast<double>(os[d]));
              }
              pack_row(d_o, dh, dhp, T(1) - beta, dOp + r * dhp);
              Dr[r] = dot_ascending(dOp + r * dhp, os, dh);
              lse[r] = sv.lse_self[i * sv.ldls + h];
              for (int d = 0; d < dhp; ++d) dQ[r * dhp + d] = T(0);
            }
            const int rows = static_cast<int>(live);
            for (std::int64_t k0 = 0; k0 < kmax; k0 += kBK<T>) {
              const std::int64_t kb = k0 / kBK<T>;
              scores(rows, dhp, Qp, dhp, KT + kb * kBK<T> * dhp, Sp);
              scores(rows, dhp, dOp, dhp, VT + kb * kBK<T> * dhp, dP);
              for (int r = 0; r < rows; ++r) {
                T* s = Sp + r * kBK<T>;
                T* dp = dP + r * kBK<T>;
                mask_row(s, k0, keys[r].prefix);
                for (int v = 0; v < 4; ++v) {
                  const vec<T> p = simd::exp(load(s + v * kLanes<T>) - lse[r]);
                  store(s + v * kLanes<T>, p);
                  store(dp + v * kLanes<T>, p * (load(dp + v * kLanes<T>) - Dr[r]));
                }
              }
              const int kn = static_cast<int>(min64(kBK<T>, kmax - k0));
              // dV[k0 + j] += Σ_r P[r][j] dO[r]; dK[k0 + j] += Σ_r dS[r][j] Q[r]
              accumulate_dh<T, true>(nv, kn, rows, Sp, kBK<T>, dOp, dhp, dV + k0 * dhp, dhp);
              accumulate_dh<T, true>(nv, kn, rows, dP, kBK<T>, Qp, dhp, dK + k0 * dhp, dhp);
              // dQ[r] += Σ_j dS[r][j] K[k0 + j]
              accumulate_dh<T, false>(nv, rows, kn, dP, kBK<T>, Kr + k0 * dhp, dhp, dQ, dhp);
            }
            for (int r = 0; r < rows; ++r) {
              const std::int64_t i = b * S + q0 + r;
              T* dqr = dQ + r * dhp;
              const T* qr = Qp + r * dhp;
              const T* dor = dOp + r * dhp;
              if (keys[r].extra >= 0) {
                const std::int64_t e = keys[r].extra;
                const T s = dot(qr, kbase + e * a.ldk, dh);
                const T p = exp1(s - lse[r]);
                const T ds = p * (dot_ascending(dor, vbase + e * a.ldv, dh) - Dr[r]);
                T* dvr = dV + e * dhp;
                T* dkr = dK + e * dhp;
                const T* kr = Kr + e * dhp;
                for (int d = 0; d < dhp; d += kLanes<T>) {
                  store(dvr + d, load(dvr + d) + p * load(dor + d));
                  store(dkr + d, load(dkr + d) + ds * load(qr + d));
                  store(dqr + d, load(dqr + d) + ds * load(kr + d));
                }
              }
              T* dq = gr.dq + i * gr.lddq + h * dh;
              if (nctx == 0) {  // no context: only the self part of dq
                for_lanes<T>(dh, [&](std::int64_t d, std::int64_t k) {
                  store_n(dq + d, scale * load_n(dqr + d, k), k);
                });
                continue;
              }
              // Context attention: dq here, the context rows' factors for the scatter.
              const T* d_o = sv.d_o + i * sv.lddo + h * dh;
              const T* oc = sv.o_ctx + i * sv.ldoc + h * dh;
              const std::int64_t crow = a.ctx_row[i * a.ld_cr];
              const T lse_c = sv.lse_ctx[i * sv.ldlc + h];
              // doc = β dO
              T d_ctx = T(0);
              {
                vec<T> acc = {};
                for_lanes<T>(dh, [&](std::int64_t d, std::int64_t k) {
                  acc += (beta * load_n(d_o + d, k)) * load_n(oc + d, k);
                });
                d_ctx = hsum(acc);
              }
              for (std::size_t c = 0; c < nctx; ++c) {
                const T* kc = a.ctx_k[c] + crow * a.ld_ctx_k[c] + g * dh;
                const T* vc = a.ctx_v[c] + crow * a.ld_ctx_v[c] + g * dh;
                const T w = exp1(dot(qr, kc, dh) - lse_c);
                vec<T> acc = {};
                for_lanes<T>(dh, [&](std::int64_t d, std::int64_t k) {
                  acc += (beta * load_n(d_o + d, k)) * load_n(vc + d, k);
                });
                const T ds = w * (hsum(acc) - d_ctx);
                for_lanes<T>(dh, [&](std::int64_t d, std::int64_t k) {
                  store_n(dqr + d, load_n(dqr + d, k) + ds * load_n(kc + d, k), k);
                });
                const std::size_t at = static_cast<std::size_t>(i * H + h) * nctx + c;
                gr.coef_k[at] = scale * ds;
                gr.coef_v[at] = beta * w;
              }
              for_lanes<T>(dh, [&](std::int64_t d, std::int64_t k) {
                store_n(dq + d, scale * load_n(dqr + d, k), k);
              });
            }
          }
        }
        // The group's dK and dV rows, written.
        for (std::int64_t t = 0; t < S; ++t) {
          T* dk = gr.dk + (b * S + t) * gr.lddk + g * dh;
          T* dv = gr.dv + (b * S + t) * gr.lddv + g * dh;
          for (std::int64_t d = 0; d < dh; ++d) {
            dk[d] = dK[t * dhp + d];
            dv[d] = dV[t * dhp + d];
          }
        }
        dbeta_part[b * G + g] = dbeta;
      }
    }
  }
  for (std::int64_t p = 0; p < B * G; ++p) dbeta_total += dbeta_part[p];
  *dbeta_out = dbeta_total;
}

// ---- the table -------------------------------------------------------------------------

template <class T>
KernelSet<T> make_set() {
  KernelSet<T> s;
#define WIOLA_KERNEL_ENTRY(name, params) s.name = &name<T>;
  WIOLA_CPU_KERNELS(WIOLA_KERNEL_ENTRY)
#undef WIOLA_KERNEL_ENTRY
  return s;
}

inline Kernels make_kernels(const char* isa) {
  Kernels k;
  k.isa = isa;
  k.f32 = make_set<float>();
  k.f64 = make_set<double>();
  return k;
}

}  // namespace
}  // namespace wiola::ops::impl
