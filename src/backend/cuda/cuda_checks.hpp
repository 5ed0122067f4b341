#pragma once
// Argument checks of the CUDA backend's ops: every failure throws wiola::Error
// naming the op, the tensor and what is wrong with it, before anything is
// queued on the device.
//
// Precision (SPEC "On GPU"): the compute dtype of a call is bf16 or fp32;
// what the contract calls statistics (norm rstd, log-sum-exps, losses, ATM
// similarities) is fp32, and so are parameter gradients (fp32 accumulation)
// and the SRPE tables. In fp32 mode every floating tensor is fp32.
#include <cstdint>
#include <string>
#include <string_view>

#include "backend/shape_checks.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda {

inline void check_tensor(std::string_view op, std::string_view name, const Tensor& t) {
  require(t.defined(), op, ": ", name, " is an undefined tensor");
  require(t.device() == Device::CUDA, op, ": ", name, " is not a CUDA tensor");
}

// A compute tensor: bf16 or fp32. Returns its dtype.
inline DType compute_dtype(std::string_view op, std::string_view name, const Tensor& t) {
  check_tensor(op, name, t);
  require(t.dtype() == DType::BF16 || t.dtype() == DType::F32, op, ": ", name,
          " must be bf16 or fp32 on the CUDA backend, got ", dtype_name(t.dtype()));
  return t.dtype();
}

// A tensor of exactly dtype `want` and the given shape.
inline void check_exact(std::string_view op, std::string_view name, const Tensor& t, DType want,
                        std::int64_t rows, std::int64_t cols) {
  check_tensor(op, name, t);
  require(t.dtype() == want, op, ": ", name, " is ", dtype_name(t.dtype()), ", expected ",
          dtype_name(want));
  check_shape(op, name, t, rows, cols);
}

// Statistics and parameter gradients: fp32 whatever the compute dtype.
inline void check_f32(std::string_view op, std::string_view name, const Tensor& t,
                      std::int64_t rows, std::int64_t cols) {
  check_exact(op, name, t, DType::F32, rows, cols);
}

// Index tensor: I32 [n, 1], contiguous.
inline void check_index(std::string_view op, std::string_view name, const Tensor& t,
                        std::int64_t n) {
  check_exact(op, name, t, DType::I32, n, 1);
  require(t.contiguous() || n <= 1, op, ": ", name, " must be contiguous");
}

}  // namespace wiola::cuda
