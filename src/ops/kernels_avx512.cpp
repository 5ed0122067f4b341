// The CPU kernels compiled for AVX-512 (32 zmm registers); src/CMakeLists.txt sets
// this file's instruction set, -ffp-contract=off and -Wno-psabi.
#define WIOLA_SIMD_ACC 16
#include "ops/kernels_impl.hpp"

namespace wiola::ops {

const Kernels* kernels_avx512() {
  static const Kernels k = impl::make_kernels("avx512");
  return &k;
}

}  // namespace wiola::ops
