#pragma once
// The argument checks of one op's front (backend_front*.cpp): every failure
// throws wiola::Error naming the op, the tensor and what is wrong with it,
// before a backend sees the call.
//
// Dtypes: the first floating tensor checked with compute() sets the call's
// compute dtype, one the backend computes in; like() tensors share it;
// wide() tensors (statistics, parameter gradients, rotary tables) hold
// wide_dtype() of it: fp32 for bf16, the compute dtype otherwise.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace wiola {

inline std::string dims(const Tensor& t) {
  return std::to_string(t.rows()) + "x" + std::to_string(t.cols());
}

class OpChecks {
 public:
  OpChecks(const Backend& backend, Op op) : backend_(backend), op_(op_name(op)) {}

  std::string_view op() const { return op_; }
  DType dtype() const { return dtype_; }

  template <class... What>
  void require(bool ok, What&&... what) const {
    wiola::require(ok, op_, ": ", std::forward<What>(what)...);
  }

  // Defined and in this backend's memory.
  void tensor(std::string_view name, const Tensor& t) const;
  // Rows x cols.
  void shape(std::string_view name, const Tensor& t, std::int64_t rows, std::int64_t cols) const;
  // Sets the call's compute dtype from t (here, a dtype the backend computes in).
  DType compute(std::string_view name, const Tensor& t);
  // The call's compute dtype and the given shape.
  void like(std::string_view name, const Tensor& t, std::int64_t rows, std::int64_t cols) const;
  // wide_dtype() of the call's compute dtype and the given shape.
  void wide(std::string_view name, const Tensor& t, std::int64_t rows, std::int64_t cols) const;
  // Exactly `dtype` and the given shape.
  void exact(std::string_view name, const Tensor& t, DType dtype, std::int64_t rows,
             std::int64_t cols) const;
  // An index tensor: I32 [n, 1].
  void index(std::string_view name, const Tensor& t, std::int64_t n) const;
  // x [N, heads·head_dim] with head_dim > 0: returns heads.
  std::int64_t heads(std::string_view name, const Tensor& x, int head_dim) const;

 private:
  const Backend& backend_;
  std::string_view op_;
  DType dtype_ = DType::F32;
  bool has_dtype_ = false;
};

}  // namespace wiola
