// The CPU kernels compiled for AVX2 (16 ymm registers); src/CMakeLists.txt sets
// this file's instruction set, -ffp-contract=off and -Wno-psabi.
#define WIOLA_SIMD_ACC 6
#include "ops/kernels_impl.hpp"

namespace wiola::ops {

const Kernels* kernels_avx2() {
  static const Kernels k = impl::make_kernels("avx2");
  return &k;
}

}  // namespace wiola::ops
