#pragma once
// The matrix products of the CUDA backend, behind one call. Row-major views
// as everywhere in wiola: C [m, n] = alpha · op(A) · op(B) + beta · C with
// op(A) [m, k], op(B) [k, n]; accumulation in fp32 whatever the storage type.
// Two implementations: cuBLASLt (blas_cublaslt.cpp) and, for tests without a
// GPU, the test tree's stand-in on OpenBLAS (inputs as stored, bf16 widened
// to fp32, the result rounded to C's type).
#include <cstdint>
#include <memory>

#include "backend/cuda/runtime.hpp"
#include "core/dtype.hpp"

namespace wiola::cuda {

struct MatrixView {
  const void* data = nullptr;
  DType dtype = DType::F32;  // F32 or BF16
  std::int64_t ld = 0;       // row stride in elements
};

class Blas {
 public:
  explicit Blas(Stream stream);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // C = alpha·op(A)·op(B) + beta·C; A, B, C row-major; C may be BF16 or F32
  // independently of A and B (which share a type).
  void gemm(bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k,
            float alpha, MatrixView a, MatrixView b, float beta, void* c, DType c_dtype,
            std::int64_t ldc);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace wiola::cuda
