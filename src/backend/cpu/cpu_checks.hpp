#pragma once
// Argument checks shared by the CPU backend's ops. Every failure throws
// wiola::Error naming the op, the tensor and what is wrong with it.
#include <cstdint>
#include <string>
#include <string_view>

#include "backend/shape_checks.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace wiola::cpu {

// The tensor exists and lives on the CPU.
inline void check_tensor(std::string_view op, std::string_view name, const Tensor& t) {
  require(t.defined(), op, ": ", name, " is an undefined tensor");
  require(t.device() == Device::CPU, op, ": ", name, " is not a CPU tensor");
}

// A floating tensor the CPU computes in: fp32 or fp64. Returns its dtype.
inline DType float_dtype(std::string_view op, std::string_view name, const Tensor& t) {
  check_tensor(op, name, t);
  require(t.dtype() != DType::BF16, op, ": ", name,
          " is bf16, which the CPU backend does not support (use fp32 or fp64)");
  require(t.dtype() == DType::F32 || t.dtype() == DType::F64, op, ": ", name,
          " must be fp32 or fp64, got ", dtype_name(t.dtype()));
  return t.dtype();
}

// All floating tensors of one call share the dtype `want`.
inline void check_dtype(std::string_view op, std::string_view name, const Tensor& t, DType want) {
  float_dtype(op, name, t);
  require(t.dtype() == want, op, ": ", name, " is ", dtype_name(t.dtype()),
          " but the other tensors of the call are ", dtype_name(want));
}

// Floating tensor of the call's dtype and the given shape.
inline void check_float(std::string_view op, std::string_view name, const Tensor& t, DType want,
                        std::int64_t rows, std::int64_t cols) {
  check_dtype(op, name, t, want);
  check_shape(op, name, t, rows, cols);
}

// Index tensor: I32 [n, 1].
inline void check_index(std::string_view op, std::string_view name, const Tensor& t,
                        std::int64_t n) {
  check_tensor(op, name, t);
  require(t.dtype() == DType::I32, op, ": ", name, " must be i32, got ",
          dtype_name(t.dtype()));
  check_shape(op, name, t, n, 1);
}

// Element i of an I32 [n, 1] index tensor.
inline std::int32_t index_at(const Tensor& t, std::int64_t i) {
  return t.ptr<std::int32_t>()[i * t.ld()];
}

// Runs f(T{}) with T = float or double for a tensor dtype already checked by
// float_dtype.
template <class F>
void dispatch(DType dt, F&& f) {
  if (dt == DType::F32)
    f(float{});
  else
    f(double{});
}

}  // namespace wiola::cpu
