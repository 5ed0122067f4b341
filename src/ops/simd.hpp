#pragma once
// Portable 64-byte vectors for the CPU kernels (16 floats or 8 doubles),
// written with GCC's vector extensions and compiled once per instruction set
// (kernels_sse.cpp, kernels_avx2.cpp, kernels_avx512.cpp): one zmm register
// with AVX-512, two ymm with AVX2, four xmm with SSE. Only the ISA files
// include this header, and everything in it has internal linkage, so no
// function compiled for one instruction set can stand in for another's at
// link time.
//
// Same bits on every instruction set: the vector width is always 64 bytes
// whatever the registers, every operation is an IEEE add, multiply, divide,
// square root, compare or select done lane by lane, the ISA files are built
// with -ffp-contract=off (no fused multiply-add), and horizontal sums use
// one fixed tree. So the SSE, AVX2 and AVX-512 kernels agree bit for bit
// (tests/ops/test_kernels.cpp checks it), and the result does not depend on
// the machine beyond OpenBLAS's products.
//
// exp and erf for fp32 are polynomials fitted for this project
// (tools/fit-simd-polynomials.py): exp within 1.1 ulp over its whole range
// (results below 2^-149 flush to 0, above FLT_MAX give inf), erf within
// 1.3e-7 absolute. fp64 lanes call the C library's exp and erf, so the fp64
// reference keeps its accuracy.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace wiola::ops::simd {
namespace {

template <class T>
struct VecOf;
template <>
struct VecOf<float> {
  typedef float type __attribute__((vector_size(64)));
  typedef std::int32_t mask __attribute__((vector_size(64)));
};
template <>
struct VecOf<double> {
  typedef double type __attribute__((vector_size(64)));
  typedef std::int64_t mask __attribute__((vector_size(64)));
};

template <class T>
using vec = typename VecOf<T>::type;
template <class T>
using mask = typename VecOf<T>::mask;
// The element type of mask<T>: an integer as wide as T.
template <class T>
using mask_elem = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
template <class T>
inline constexpr int kLanes = 64 / static_cast<int>(sizeof(T));

#define WIOLA_INLINE [[gnu::always_inline]] inline

template <class T>
WIOLA_INLINE vec<T> load(const T* p) {
  vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
WIOLA_INLINE void store(T* p, vec<T> v) {
  std::memcpy(p, &v, sizeof v);
}
// The first n < kLanes elements; the other lanes are zero.
template <class T>
WIOLA_INLINE vec<T> load_part(const T* p, std::int64_t n) {
  vec<T> v = {};
  for (std::int64_t i = 0; i < n; ++i) v[i] = p[i];
  return v;
}
template <class T>
WIOLA_INLINE void store_part(T* p, vec<T> v, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = v[i];
}
template <class T>
WIOLA_INLINE vec<T> bcast(T x) {
  return vec<T>{} + x;
}
template <class T>
WIOLA_INLINE vec<T> vmax(vec<T> a, vec<T> b) {
  return a > b ? a : b;
}
// Lanes where m is set take a, the others b.
template <class T>
WIOLA_INLINE vec<T> select(mask<T> m, vec<T> a, vec<T> b) {
  return m ? a : b;
}

// Σ lanes in one fixed tree: halves added pairwise until one lane is left
// (what a 512-bit register reduction does, and what narrower registers
// reproduce).
template <class V>
using elem_t = std::remove_cvref_t<decltype(std::declval<V>()[0])>;

template <class V, class T = elem_t<V>>
WIOLA_INLINE T hsum(V v) {
  constexpr int n = kLanes<T>;
  T a[n];
  std::memcpy(a, &v, sizeof v);
  for (int w = n / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) a[i] = a[i] + a[i + w];
  return a[0];
}
template <class V, class T = elem_t<V>>
WIOLA_INLINE T hmax(V v) {
  constexpr int n = kLanes<T>;
  T a[n];
  std::memcpy(a, &v, sizeof v);
  for (int w = n / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) a[i] = a[i] > a[i + w] ? a[i] : a[i + w];
  return a[0];
}

// ---- exp -------------------------------------------------------------------
// fp32: x = n·ln2 + r with n = round(x·log2 e) and |r| <= ln2/2 (ln2 split
// in two so that n·kLn2Hi is exact), e^r = 1 + r + r²·P(r) with P of degree
// 4, then 2^n applied as two factors (so that 2^128 and subnormal results
// come out right). NaN stays NaN.
WIOLA_INLINE vec<float> exp(vec<float> x) {
  using vf = vec<float>;
  using vi = mask<float>;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kRound = 12582912.0f;  // 1.5 · 2^23: adding it rounds to an integer
  constexpr float kLn2Hi = 0.693359375f;           // 355/512, 9 significant bits
  constexpr float kLn2Lo = -2.12194440e-4f;        // ln 2 − kLn2Hi
  constexpr float c2 = 0.5000002384185791f, c3 = 0.16666533052921295f,
                  c4 = 0.04166112095117569f, c5 = 0.008367430418729782f,
                  c6 = 0.001423914567567408f;
  const vf xc = vmax<float>(bcast(-110.0f), x < 90.0f ? x : bcast(90.0f));
  const vf n = (xc * kLog2e + kRound) - kRound;
  const vf r = (xc - n * kLn2Hi) - n * kLn2Lo;
  vf q = r * c6 + c5;
  q = q * r + c4;
  q = q * r + c3;
  q = q * r + c2;
  const vf e = 1.0f + (r + (r * r) * q);
  const vi ni = __builtin_convertvector(n, vi);
  const vi h = ni >> 1;
  vf s1, s2;
  const vi b1 = (h + 127) << 23, b2 = (ni - h + 127) << 23;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  const vf y = (e * s1) * s2;
  return x == x ? y : x;
}

WIOLA_INLINE vec<double> exp(vec<double> x) {
  vec<double> y = {};
  for (int i = 0; i < kLanes<double>; ++i) y[i] = std::exp(x[i]);
  return y;
}

// ---- erf -------------------------------------------------------------------
// fp32: |x| < 0.875: x·P(x²), P of degree 6; otherwise
// sign(x)·(1 − e^(−x²)·R(t)), t = 1/(1 + x/2), R of degree 9, |x| clamped to 4
// (erf rounds to ±1 in fp32 beyond 3.92). Both branches run on every lane
// and a select picks one.
WIOLA_INLINE vec<float> erf(vec<float> x) {
  using vf = vec<float>;
  const vf ax = x < 0.0f ? -x : x;
  const vf z = ax * ax;
  vf p = z * 8.548955520382151e-05f + -0.0008181687444448471f;
  p = p * z + 0.005204162560403347f;
  p = p * z + -0.026860525831580162f;
  p = p * z + 0.11283712834119797f;
  p = p * z + -0.37612634897232056f;
  p = p * z + 1.128379225730896f;
  const vf small = ax * p;
  const vf xl = ax < 4.0f ? ax : bcast(4.0f);
  const vf t = 1.0f / (1.0f + xl * 0.5f);
  vf q = t * -0.07973527163267136f + 0.3717784881591797f;
  q = q * t + -0.6442558169364929f;
  q = q * t + 0.4354037344455719f;
  q = q * t + -0.12231266498565674f;
  q = q * t + 0.238790363073349f;
  q = q * t + 0.23486997187137604f;
  q = q * t + 0.28340744972229004f;
  q = q * t + 0.28203362226486206f;
  q = q * t + -3.290182348791859e-07f;
  const vf large = 1.0f - exp(-(xl * xl)) * q;
  const vf m = ax < 0.875f ? small : large;
  const vf y = x < 0.0f ? -m : m;
  return x == x ? y : x;
}

WIOLA_INLINE vec<double> erf(vec<double> x) {
  vec<double> y;
  for (int i = 0; i < kLanes<double>; ++i) y[i] = std::erf(x[i]);
  return y;
}

// σ(x) with exp taken of −|x| only: 1/(1 + e) for x >= 0, e/(1 + e) below.
template <class T>
WIOLA_INLINE vec<T> sigmoid(vec<T> x) {
  const vec<T> e = exp(x < T(0) ? x : -x);
  const vec<T> d = T(1) + e;
  return x >= T(0) ? T(1) / d : e / d;
}

// Calls f(j, count) over [0, n) in whole vectors, then once for the tail
// (count < kLanes), so a kernel handles every column with the same code.
template <class T, class F>
WIOLA_INLINE void for_lanes(std::int64_t n, F&& f) {
  constexpr int L = kLanes<T>;
  std::int64_t j = 0;
  for (; j + L <= n; j += L) f(j, std::int64_t(L));
  if (j < n) f(j, n - j);
}

// Loads or stores the lanes a for_lanes step covers.
template <class T>
WIOLA_INLINE vec<T> load_n(const T* p, std::int64_t count) {
  return count == kLanes<T> ? load(p) : load_part(p, count);
}
template <class T>
WIOLA_INLINE void store_n(T* p, vec<T> v, std::int64_t count) {
  if (count == kLanes<T>)
    store(p, v);
  else
    store_part(p, v, count);
}

}  // namespace
}  // namespace wiola::ops::simd
