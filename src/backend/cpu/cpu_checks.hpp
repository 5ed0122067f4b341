#pragma once
// What the CPU backend's ops share beyond the Backend front's checks: the
// dispatch by dtype, and the checks of the index values a kernel follows
// (the CPU reads them anyway, so it refuses a bad one by name rather than
// read outside a tensor).
#include <cstdint>
#include <string_view>

#include "core/error.hpp"
#include "core/tensor.hpp"

namespace wiola::cpu {

// Element i of an I32 [n, 1] index tensor.
inline std::int32_t index_at(const Tensor& t, std::int64_t i) {
  return t.ptr<std::int32_t>()[i * t.ld()];
}

// Every entry of an I32 [n, 1] index tensor lies in [lo, hi).
inline void check_range(std::string_view op, std::string_view name, const Tensor& idx,
                        std::int64_t lo, std::int64_t hi) {
  for (std::int64_t i = 0; i < idx.rows(); ++i) {
    const std::int64_t v = index_at(idx, i);
    require(v >= lo && v < hi, op, ": ", name, "[", i, "] = ", v, " is outside [", lo, ", ", hi,
            ")");
  }
}

// Runs f(T{}) with T = float or double for a dtype the CPU computes in.
template <class F>
void dispatch(DType dt, F&& f) {
  if (dt == DType::F32)
    f(float{});
  else
    f(double{});
}

}  // namespace wiola::cpu
