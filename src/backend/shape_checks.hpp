#pragma once
// Shape checks that every backend's ops share (the device-specific checks,
// dtypes and memory, live in backend/cpu/cpu_checks.hpp and
// backend/cuda/cuda_checks.hpp). Every failure throws wiola::Error naming the
// op, the tensor and what is wrong with it.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/tensor.hpp"

namespace wiola {

inline std::string dims(const Tensor& t) {
  return std::to_string(t.rows()) + "x" + std::to_string(t.cols());
}

inline void check_shape(std::string_view op, std::string_view name, const Tensor& t,
                        std::int64_t rows, std::int64_t cols) {
  require(t.rows() == rows && t.cols() == cols, op, ": ", name, " is ", dims(t), ", expected ",
          rows, "x", cols);
}

// x [N, heads·head_dim]: returns heads.
inline std::int64_t check_heads(std::string_view op, std::string_view name, const Tensor& x,
                                int head_dim) {
  require(head_dim > 0, op, ": head_dim ", head_dim, " must be positive");
  require(x.cols() > 0 && x.cols() % head_dim == 0, op, ": ", name, " is ", dims(x),
          ", whose width is not a positive multiple of head_dim ", head_dim);
  return x.cols() / head_dim;
}

}  // namespace wiola
