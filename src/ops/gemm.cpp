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

// Why a cut product keeps the bits of one call: OpenBLAS (0.3.x on x86-64)
// sends products of at most 100³ multiply-adds to its small-matrix kernels,
// which sum in their own order; larger ones go through the packed kernels,
// where every element of C sums its K products in one order fixed by K
// alone, whatever the M and N extents of the call. So a product cut along M
// or N into pieces that each stay above 100³ gives, element for element, the
// bits of the whole product in one call, for any number of pieces
// (ops.Linear.BitIdenticalAcrossThreadCounts checks it on odd shapes).
constexpr double kSmallPathWork = 1e6;
// Products of at most this many multiply-adds OpenBLAS runs on the calling
// thread whatever its thread count (its own threshold, 65536·4).
constexpr double kOneThreadWork = 262144.0;

// The product cut into one piece of C per OpenMP thread along its longer
// side: rows of C (and of op(A)) or columns of C (and of op(B)). Each piece is
// one BLAS call over the whole of K, made inside the OpenMP loop, where
// OpenBLAS runs it on the calling thread. One piece per thread rather than
// more: every piece packs the operand all pieces share again, which for the
// weight gradients' long K costs as much as a tenth of the product.
template <class T>
void chunked(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
             const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
             std::int64_t ldc, std::int64_t piece) {
  const bool by_rows = m >= n;
  const std::int64_t dim = by_rows ? m : n;
  const std::int64_t pieces = (dim + piece - 1) / piece;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t p = 0; p < pieces; ++p) {
    const std::int64_t s0 = p * piece, len = std::min(piece, dim - s0);
    if (by_rows) {
      // Rows s0.. of op(A): row s0 of A, or column s0 of Aᵀ's storage.
      const T* ap = ta ? a + s0 : a + s0 * lda;
      blas(ta, tb, len, n, k, alpha, ap, lda, b, ldb, beta, c + s0 * ldc, ldc);
    } else {
      const T* bp = tb ? b + s0 * ldb : b + s0;
      blas(ta, tb, m, len, k, alpha, a, lda, bp, ldb, beta, c + s0, ldc);
    }
  }
}

// The length of a piece along the longer side for `threads` threads, a
// multiple of 16 with every piece (the last included) above the small-matrix
// bound; 0 when the product stays one call.
std::int64_t piece_length(std::int64_t m, std::int64_t n, std::int64_t k, int threads) {
  const std::int64_t dim = std::max(m, n), other = std::min(m, n);
  for (std::int64_t want = std::min<std::int64_t>(threads, dim / 16); want >= 2; --want) {
    const std::int64_t piece = ((dim + want - 1) / want + 15) / 16 * 16;
    const std::int64_t pieces = (dim + piece - 1) / piece;
    const std::int64_t last = dim - (pieces - 1) * piece;
    if (pieces >= 2 && double(last) * double(other) * double(k) > kSmallPathWork) return piece;
  }
  return 0;
}

template <class T>
void gemm_any(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
              const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
              std::int64_t ldc) {
  if (!prepare(ta, tb, m, n, k, lda, ldb, beta, c, ldc)) return;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  // At most 64³ OpenBLAS keeps to one thread by itself; one thread has nothing to cut.
  if (threads == 1 || double(m) * double(n) * double(k) <= kOneThreadWork) {
    blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const std::int64_t piece = piece_length(m, n, k, threads);
  if (piece > 0) {
    chunked(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, piece);
    return;
  }
  // Too small to cut: one call, made inside a parallel region so that
  // OpenBLAS runs it on one thread (its own threading would cut it its way).
#pragma omp parallel
  {
#pragma omp master
    blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
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
