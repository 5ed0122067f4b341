#pragma once
// What a matrix-product algorithm is chosen for, and so what it may be reused
// for: transposes, shape, row strides, types, and the alignment of each
// operand's start. cuBLASLt's algorithms may assume their operands' alignment
// (256 bytes unless the preferences say less); one chosen for aligned
// operands must never run on less-aligned ones, so the alignment the wrapper
// states is part of the cache key. Shared by the cuBLASLt wrapper and its
// emulation (tests/cuda_emu/blas_emu.cpp), which refuses a call whose operands
// are less aligned than the algorithm it was given assumes.
#include <compare>
#include <cstdint>

#include "backend/cuda/blas.hpp"
#include "core/alignment.hpp"

namespace wiola::cuda {

struct GemmKey {
  bool ta = false, tb = false;
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  DType ab = DType::F32, c = DType::F32;
  // Bytes (a power of two, at most kOperandAlignBytes) of A's, B's and C's
  // starts; D is C (products write in place).
  std::int64_t align_a = 0, align_b = 0, align_c = 0;
  auto operator<=>(const GemmKey&) const = default;
};

inline GemmKey gemm_key(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                        const MatrixView& a, const MatrixView& b, const void* c, DType c_dtype,
                        std::int64_t ldc) {
  return {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = a.ld, .ldb = b.ld, .ldc = ldc,
          .ab = a.dtype, .c = c_dtype, .align_a = address_alignment(a.data),
          .align_b = address_alignment(b.data), .align_c = address_alignment(c)};
}

}  // namespace wiola::cuda
