#pragma once
// The nvcuda::wmma subset the kernels use: 16x16x16 tiles, bf16 (or half as
// bf16 storage) A and B, fp32 accumulators. Fragments are warp-collective:
// every lane of the warp must make the same call, which the emulation checks
// (each call is a warp barrier). Which elements a lane holds is unspecified by
// CUDA; here lane l holds elements [8l, 8l + 8) of the tile in row-major order.
// A kernel that reads fragment elements by position would work here and not on
// hardware: the kernels only apply the same operation to every element, or go
// through store_matrix_sync.
#include <cstdint>

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K>
struct tile_shape;
template <int M, int N, int K>
struct tile_shape<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct tile_shape<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct tile_shape<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulation supports 16x16x16 tiles");
  using shape = tile_shape<Use, M, N, K>;
  static constexpr int num_elements = shape::rows * shape::cols / 32;
  T x[num_elements];
};

namespace detail {
inline float as_float(float v) { return v; }
inline float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
T from_float(float v);
template <>
inline float from_float<float>(float v) { return v; }
template <>
inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
// Row and column of element i of this lane's share of a rows x cols tile.
inline void where(int i, int cols, int& r, int& c) {
  const int e = ::wiola::emu::this_thread().lane * 8 + i;
  r = e / cols;
  c = e % cols;
}
// A whole tile moved between memory and a fragment, counted once per warp.
template <class F, class T>
void count_tile() {
  if (::wiola::emu::this_thread().lane == 0)
    ::wiola::emu::count_fragment_bytes(std::int64_t(F::num_elements) * 32 * sizeof(T));
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, T v) {
  ::wiola::emu::warp_exchange(0);
  for (auto& e : f.x) e = v;
}

// A or B with its layout in the type.
template <class Use, int M, int N, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  using F = fragment<Use, M, N, K, T, Layout>;
  detail::count_tile<F, T>();
  ::wiola::emu::warp_exchange(0);
  for (int i = 0; i < F::num_elements; ++i) {
    int r, c;
    detail::where(i, F::shape::cols, r, c);
    f.x[i] = std::is_same_v<Layout, col_major> ? p[std::size_t(c) * ldm + r]
                                                 : p[std::size_t(r) * ldm + c];
  }
}

// Accumulators: the layout is given at the call.
template <int M, int N, int K>
void load_matrix_sync(fragment<accumulator, M, N, K, float>& f, const float* p, unsigned ldm,
                      layout_t layout) {
  using F = fragment<accumulator, M, N, K, float>;
  detail::count_tile<F, float>();
  ::wiola::emu::warp_exchange(0);
  for (int i = 0; i < F::num_elements; ++i) {
    int r, c;
    detail::where(i, F::shape::cols, r, c);
    f.x[i] = layout == mem_col_major ? p[std::size_t(c) * ldm + r] : p[std::size_t(r) * ldm + c];
  }
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm,
                       layout_t layout) {
  using F = fragment<accumulator, M, N, K, float>;
  detail::count_tile<F, float>();
  ::wiola::emu::warp_exchange(0);
  for (int i = 0; i < F::num_elements; ++i) {
    int r, c;
    detail::where(i, F::shape::cols, r, c);
    (layout == mem_col_major ? p[std::size_t(c) * ldm + r] : p[std::size_t(r) * ldm + c]) = f.x[i];
  }
}

// d = a·b + c, products and sums in fp32 (k in order).
template <int M, int N, int K, class TA, class LA, class TB, class LB>
void mma_sync(fragment<accumulator, M, N, K, float>& d,
              const fragment<matrix_a, M, N, K, TA, LA>& a,
              const fragment<matrix_b, M, N, K, TB, LB>& b,
              const fragment<accumulator, M, N, K, float>& c) {
  float* scratch = ::wiola::emu::warp_scratch();  // A [16x16] then B [16x16]
  const int lane = ::wiola::emu::this_thread().lane;
  if (lane == 0) ::wiola::emu::count_mma_flops(2 * 16 * 16 * 16);
  for (int i = 0; i < 8; ++i) {
    scratch[lane * 8 + i] = detail::as_float(a.x[i]);
    scratch[256 + lane * 8 + i] = detail::as_float(b.x[i]);
  }
  ::wiola::emu::warp_exchange(0);
  float out[8];
  for (int i = 0; i < 8; ++i) {
    int r, col;
    detail::where(i, 16, r, col);
    float acc = c.x[i];
    for (int k = 0; k < 16; ++k) acc += scratch[r * 16 + k] * scratch[256 + k * 16 + col];
    out[i] = acc;
  }
  ::wiola::emu::warp_exchange(0);  // everyone has read the scratch
  for (int i = 0; i < 8; ++i) d.x[i] = out[i];
}

}  // namespace nvcuda::wmma
