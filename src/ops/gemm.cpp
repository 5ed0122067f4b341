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

}  // namespace

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  if (!prepare(trans_a, trans_b, m, n, k, lda, ldb, beta, c, ldc)) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, blas_int(m, "m"), blas_int(n, "n"),
              blas_int(k, "k"), alpha, a, blas_int(lda, "lda"), b, blas_int(ldb, "ldb"), beta, c,
              blas_int(ldc, "ldc"));
}

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
          double* c, std::int64_t ldc) {
  if (!prepare(trans_a, trans_b, m, n, k, lda, ldb, beta, c, ldc)) return;
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, blas_int(m, "m"), blas_int(n, "n"),
              blas_int(k, "k"), alpha, a, blas_int(lda, "lda"), b, blas_int(ldb, "ldb"), beta, c,
              blas_int(ldc, "ldc"));
}

}  // namespace wiola::ops
