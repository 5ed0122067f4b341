#include "ops/gemm.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <climits>

#include "core/error.hpp"

namespace wiola::ops {
namespace {

blasint blas_int(std::int64_t v, const char* what) {
  require(v >= 0 && v <= INT_MAX, "gemm: ", what, " = ", v, " does not fit the BLAS integer type");
  return static_cast<blasint>(v);
}

// Shared shape handling: returns false when there is nothing for BLAS to do.
// BLAS rejects ld < 1 even for an empty or single-row operand, so ld is
// raised to the least value it accepts (views always have ld >= cols).
template <class T>
bool prepare(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
             std::int64_t& lda, std::int64_t& ldb, T beta, T* c, std::int64_t& ldc) {
  if (m <= 0 || n <= 0) return false;
  if (k <= 0) {  // C = beta · C: the product is empty
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return false;
  }
  lda = std::max(lda, trans_a ? m : k);
  ldb = std::max(ldb, trans_b ? k : n);
  ldc = std::max(ldc, n);
  return true;
}

void blas(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
          float* c, std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              blas_int(m, "m"), blas_int(n, "n"), blas_int(k, "k"), alpha, a,
              blas_int(lda, "lda"), b, blas_int(ldb, "ldb"), beta, c, blas_int(ldc, "ldc"));
}

void blas(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
          double* c, std::int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              blas_int(m, "m"), blas_int(n, "n"), blas_int(k, "k"), alpha, a,
              blas_int(lda, "lda"), b, blas_int(ldb, "ldb"), beta, c, blas_int(ldc, "ldc"));
}

// A fixed grid: a product larger than 64³ multiply-adds is cut along the
// longer side of C into pieces whose length depends on the shape (m, n, k)
// alone, never on the thread count; threads take pieces. Each piece is one
// BLAS call over the whole of K, made on one thread, so every element of C
// comes from the same call on the same operands for any number of threads,
// and gets the same bits with any BLAS kernel (OPENBLAS_CORETYPE included):
// ops.Linear.BitIdenticalAcrossThreadCounts checks it under several kernels.
//
// The grid's sizes trade balance against packing: every piece packs the
// operand all pieces share (K x the shorter side) again, a cost of about
// 1/length of the piece's own work, so pieces are long (kPieceTarget) where
// the side allows and never shorter than kPieceMin. A piece also stays above
// OpenBLAS's small-matrix bound (100³ multiply-adds): below it OpenBLAS 0.3
// sums in another order, above it an element of C sums its K products in an
// order fixed by K alone, so with the detected kernel the pieces give the
// bits of the whole product in one call, as the previous split did.
constexpr double kSmallPathWork = 1e6;
// Products of at most this many multiply-adds OpenBLAS runs on the calling
// thread whatever its thread count (its own threshold, 65536·4).
constexpr double kOneThreadWork = 262144.0;
constexpr std::int64_t kPieceTarget = 256;
constexpr std::int64_t kPieceMin = 64;
constexpr std::int64_t kMaxPieces = 16;

// The length of a piece along the longer side of C, a multiple of 16, from
// the shape alone; 0 when the product stays one call.
std::int64_t piece_length(std::int64_t m, std::int64_t n, std::int64_t k) {
  if (double(m) * double(n) * double(k) <= kOneThreadWork) return 0;
  const std::int64_t dim = std::max(m, n), other = std::min(m, n);
  const std::int64_t want = std::clamp<std::int64_t>(dim / kPieceTarget, 2, kMaxPieces);
  for (std::int64_t w = want; w >= 2; --w) {
    const std::int64_t piece = ((dim + w - 1) / w + 15) / 16 * 16;
    const std::int64_t pieces = (dim + piece - 1) / piece;
    const std::int64_t last = dim - (pieces - 1) * piece;
    if (piece >= kPieceMin && pieces >= 2 && double(last) * double(other) * double(k) > kSmallPathWork)
      return piece;
  }
  return 0;
}

// One piece of C: rows s0 .. s0+len of C (and of op(A)) when cutting rows,
// else those columns of C (and of op(B)).
template <class T>
void piece_call(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
                std::int64_t ldc, bool by_rows, std::int64_t s0, std::int64_t len) {
  if (by_rows) {
    // Rows s0.. of op(A): row s0 of A, or column s0 of Aᵀ's storage.
    const T* ap = ta ? a + s0 : a + s0 * lda;
    blas(ta, tb, len, n, k, alpha, ap, lda, b, ldb, beta, c + s0 * ldc, ldc);
  } else {
    const T* bp = tb ? b + s0 * ldb : b + s0;
    blas(ta, tb, m, len, k, alpha, a, lda, bp, ldb, beta, c + s0, ldc);
  }
}

template <class T>
void gemm_any(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
              const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
              std::int64_t ldc) {
  if (!prepare(ta, tb, m, n, k, lda, ldb, beta, c, ldc)) return;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const std::int64_t piece = piece_length(m, n, k);
  if (piece == 0) {
    // One call. On one OpenMP thread OpenBLAS keeps to it (its OpenMP build
    // takes its thread count from OpenMP's); else the call is made inside a
    // parallel region, where OpenBLAS does not cut it its own way.
    if (threads == 1) {
      blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
#pragma omp parallel
    {
#pragma omp master
      blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    return;
  }
  const bool by_rows = m >= n;
  const std::int64_t dim = by_rows ? m : n;
  const std::int64_t pieces = (dim + piece - 1) / piece;
#pragma omp parallel for schedule(dynamic, 1) if (threads > 1)
  for (std::int64_t p = 0; p < pieces; ++p) {
    const std::int64_t s0 = p * piece;
    piece_call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, by_rows, s0,
               std::min(piece, dim - s0));
  }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  gemm_any(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
          double* c, std::int64_t ldc) {
  gemm_any(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_blas(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
               float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
               float beta, float* c, std::int64_t ldc) {
  if (!prepare(trans_a, trans_b, m, n, k, lda, ldb, beta, c, ldc)) return;
  blas(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace wiola::ops
