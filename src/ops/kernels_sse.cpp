// The CPU kernels compiled for SSE4.2 (x86-64-v2, the build's baseline: every machine it runs on has it); src/CMakeLists.txt sets
// this file's instruction set, -ffp-contract=off and -Wno-psabi.
#define WIOLA_SIMD_ACC 3
#include "ops/kernels_impl.hpp"

namespace wiola::ops {

const Kernels* kernels_sse() {
  static const Kernels k = impl::make_kernels("sse");
  return &k;
}

}  // namespace wiola::ops
