#pragma once
// Where the operands of a device library start. cuBLASLt's algorithms assume
// 256-byte aligned A, B, C and D unless told otherwise (its
// CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES preferences default to 256), and
// vector kernels read aligned rows fastest, so every buffer wiola carves
// operands from puts them on 256-byte boundaries: the flat parameter layout
// pads each parameter's start (param_layout.hpp), ZeRO shards start on such
// boundaries (train/zero_shard.hpp), and the device allocators hand out
// 256-byte aligned memory.
#include <cstdint>

namespace wiola {

inline constexpr std::int64_t kOperandAlignBytes = 256;
// Elements per aligned step of a flat buffer: 256 bytes of the narrowest type
// stored there (bf16). A multiple of it is 256-byte aligned in bf16, fp32 and fp64.
inline constexpr std::int64_t kAlignElements = kOperandAlignBytes / 2;

// n rounded up to a multiple of `step` (> 0).
constexpr std::int64_t align_up(std::int64_t n, std::int64_t step) {
  return (n + step - 1) / step * step;
}

// The largest power of two, at most kOperandAlignBytes, that divides the address.
inline std::int64_t address_alignment(const void* p) {
  const auto a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
  std::int64_t align = 1;
  while (align < kOperandAlignBytes && a % std::uint64_t(2 * align) == 0) align *= 2;
  return align;
}

}  // namespace wiola
