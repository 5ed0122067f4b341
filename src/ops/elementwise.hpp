#pragma once
// Elementwise kernels and the sum-of-squares reduction on strided views
// (rows x cols, row stride ld in elements). Outputs may be the same view as an
// input: every element is read before it is written.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/parallel.hpp"

namespace wiola::ops {

template <class T>
void fill(std::int64_t rows, std::int64_t cols, T value, T* x, std::int64_t ldx) {
  for_each_block(rows, cols, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    T* xr = x + r * ldx;
    for (std::int64_t c = c0; c < c1; ++c) xr[c] = value;
  });
}

// dst = src, converting the element type (S == D is a plain copy).
template <class S, class D>
void convert(std::int64_t rows, std::int64_t cols, const S* src, std::int64_t lds, D* dst,
             std::int64_t ldd) {
  for_each_block(rows, cols, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    const S* sr = src + r * lds;
    D* dr = dst + r * ldd;
    for (std::int64_t c = c0; c < c1; ++c) dr[c] = static_cast<D>(sr[c]);
  });
}

// out = a + b
template <class T>
void add(std::int64_t rows, std::int64_t cols, const T* a, std::int64_t lda, const T* b,
         std::int64_t ldb, T* out, std::int64_t ldo) {
  for_each_block(rows, cols, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    const T* ar = a + r * lda;
    const T* br = b + r * ldb;
    T* orow = out + r * ldo;
    for (std::int64_t c = c0; c < c1; ++c) orow[c] = ar[c] + br[c];
  });
}

// y += alpha * x
template <class T>
void axpy(std::int64_t rows, std::int64_t cols, T alpha, const T* x, std::int64_t ldx, T* y,
          std::int64_t ldy) {
  for_each_block(rows, cols, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    const T* xr = x + r * ldx;
    T* yr = y + r * ldy;
    for (std::int64_t c = c0; c < c1; ++c) yr[c] += alpha * xr[c];
  });
}

// x *= alpha
template <class T>
void scale(std::int64_t rows, std::int64_t cols, T alpha, T* x, std::int64_t ldx) {
  for_each_block(rows, cols, [&](std::int64_t r, std::int64_t c0, std::int64_t c1) {
    T* xr = x + r * ldx;
    for (std::int64_t c = c0; c < c1; ++c) xr[c] *= alpha;
  });
}

// Σ x in double, the elements added one after another in row-major order
// (a loss of B·T per-token values: small, and its rounding is fixed).
template <class T>
double sum_in_order(std::int64_t rows, std::int64_t cols, const T* x, std::int64_t ldx) {
  double s = 0.0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) s += static_cast<double>(x[r * ldx + c]);
  return s;
}

// Elements per partial sum of sum_squares. Fixed (never derived from the thread
// count) so the rounding of the result is the same on every run.
inline constexpr std::int64_t kSumChunk = 4096;

// Σ x² in double over the view read row by row. The flat element range is cut
// into kSumChunk pieces; each piece is summed on its own and the partials are
// added in order. NaN and Inf propagate (squares are never negative, so no
// Inf - Inf can appear).
template <class T>
double sum_squares(std::int64_t rows, std::int64_t cols, const T* x, std::int64_t ldx) {
  const std::int64_t total = rows * cols;
  if (total <= 0) return 0.0;
  const std::int64_t nchunks = (total + kSumChunk - 1) / kSumChunk;
  std::vector<double> partial(static_cast<std::size_t>(nchunks), 0.0);
#pragma omp parallel for schedule(static) if (total >= kMinParallelWork)
  for (std::int64_t k = 0; k < nchunks; ++k) {
    std::int64_t e = k * kSumChunk;
    const std::int64_t end = std::min(total, e + kSumChunk);
    std::int64_t r = e / cols, c = e % cols;
    // Four running sums let the loop pipeline; their combination order is fixed.
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    while (e < end) {
      const std::int64_t run = std::min(cols - c, end - e);
      const T* p = x + r * ldx + c;
      std::int64_t i = 0;
      for (; i + 4 <= run; i += 4) {
        const double v0 = p[i], v1 = p[i + 1], v2 = p[i + 2], v3 = p[i + 3];
        s0 += v0 * v0;
        s1 += v1 * v1;
        s2 += v2 * v2;
        s3 += v3 * v3;
      }
      for (; i < run; ++i) {
        const double v = p[i];
        s0 += v * v;
      }
      e += run;
      ++r;
      c = 0;
    }
    partial[static_cast<std::size_t>(k)] = (s0 + s1) + (s2 + s3);
  }
  double sum = 0.0;
  for (double p : partial) sum += p;
  return sum;
}

}  // namespace wiola::ops
