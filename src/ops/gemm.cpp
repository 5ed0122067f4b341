#include "ops/gemm.hpp"

#include <cblas.h>

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

// Products of at most this many multiply-adds stay one BLAS call, which
// OpenBLAS itself runs on one thread (its own threshold is 65536·4).
constexpr double kChunkedWork = 262144.0;

// The product cut into pieces of C along its longer side: rows of C (and of
// op(A)) or columns of C (and of op(B)). Each piece is one BLAS call over the
// whole of K, made inside the OpenMP loop, where OpenBLAS runs it on the
// calling thread. The pieces depend on the shape only, never on the thread
// count, and so do the bits (OpenBLAS's own threading may cut a product
// differently for another thread count). One OpenMP loop per product, the
// pieces taken dynamically so that a thread held up elsewhere (a shared
// machine) delays little.
template <class T>
void chunked(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
             const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
             std::int64_t ldc) {
  const bool by_rows = m >= n;
  const std::int64_t dim = by_rows ? m : n;
  // About 8 pieces, each a multiple of 16 and at least 64 long.
  std::int64_t piece = std::max<std::int64_t>(64, (dim + 7) / 8);
  piece = (piece + 15) / 16 * 16;
  const std::int64_t pieces = (dim + piece - 1) / piece;
#pragma omp parallel for schedule(dynamic, 1) if (pieces > 1)
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

template <class T>
void gemm_any(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
              const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
              std::int64_t ldc) {
  if (!prepare(ta, tb, m, n, k, lda, ldb, beta, c, ldc)) return;
  if (double(m) * double(n) * double(k) <= kChunkedWork)
    blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    chunked(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
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
