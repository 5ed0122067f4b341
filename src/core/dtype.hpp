#pragma once
// Element types a tensor can hold. CPU kernels run in F32 or F64; BF16 is the
// GPU compute type; I32 holds token ids and index maps.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace wiola {

enum class DType : std::uint8_t { F32, F64, BF16, I32 };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::BF16: return 2;
    case DType::I32: return 4;
  }
  return 0;
}

std::string_view dtype_name(DType t);
// Parses "fp32" / "f32" / "float32", "fp64" / ..., "bf16", "i32"; throws on anything else.
DType parse_dtype(std::string_view s);

// Mixed precision (SPEC "On GPU"): with bf16 compute, statistics (norm
// rstd, log-sum-exps, losses, SRPE tables), parameter gradients and the
// optimizer's master weights and moments are fp32. Otherwise all of them are
// the compute dtype itself (fp32, or fp64 for gradient checks on the CPU).
constexpr DType wide_dtype(DType compute) { return compute == DType::BF16 ? DType::F32 : compute; }

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::F32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::F64; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::I32; };

}  // namespace wiola
