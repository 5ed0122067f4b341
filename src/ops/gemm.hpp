#pragma once
// Matrix products through OpenBLAS (row-major cblas), and the three products
// of a linear layer y = x·Wᵀ. Only gemm.cpp sees <cblas.h>.
//
// Threads: a product larger than 64³ multiply-adds is cut along the longer
// side of C into pieces whose sizes follow from its shape alone, each one
// single-threaded BLAS call over the whole of K; threads take pieces
// (gemm.cpp). Nothing about the cut depends on the thread count, so results
// are the same bits for any thread count under any BLAS kernel.
#include <cstdint>

namespace wiola::ops {

// C = alpha · op(A) · op(B) + beta · C, all row-major; op(A) is m x k, op(B)
// is k x n, C is m x n. beta == 0 overwrites C without reading it.
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc);
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
          double* c, std::int64_t ldc);

// The same product as one plain OpenBLAS call with OpenBLAS's own threading
// (benchmarks compare against it).
void gemm_blas(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
               float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
               float beta, float* c, std::int64_t ldc);

// y [n, out] (=, or += when accumulate) x [n, in] · w[out, in]ᵀ
template <class T>
void linear_fwd(std::int64_t n, std::int64_t in, std::int64_t out, const T* x, std::int64_t ldx,
                const T* w, std::int64_t ldw, T* y, std::int64_t ldy, bool accumulate) {
  gemm(false, true, n, out, in, T(1), x, ldx, w, ldw, accumulate ? T(1) : T(0), y, ldy);
}

// dx [n, in] (=, or +=) dy [n, out] · w [out, in]
template <class T>
void linear_bwd_data(std::int64_t n, std::int64_t in, std::int64_t out, const T* dy,
                     std::int64_t lddy, const T* w, std::int64_t ldw, T* dx, std::int64_t lddx,
                     bool accumulate) {
  gemm(false, false, n, in, out, T(1), dy, lddy, w, ldw, accumulate ? T(1) : T(0), dx, lddx);
}

// dw [out, in] += dy [n, out]ᵀ · x [n, in]
template <class T>
void linear_bwd_weight(std::int64_t n, std::int64_t in, std::int64_t out, const T* dy,
                       std::int64_t lddy, const T* x, std::int64_t ldx, T* dw, std::int64_t lddw) {
  gemm(true, false, out, in, n, T(1), dy, lddy, x, ldx, T(1), dw, lddw);
}

}  // namespace wiola::ops
