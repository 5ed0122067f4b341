#pragma once
// The argument checks of one op's front (backend_front*.cpp): every failure
// throws wiola::Error naming the op, the tensor and what is wrong with it,
// before a backend sees the call; run() then calls the implementation.
//
// Dtypes: the first floating tensor checked with compute() sets the call's
// compute dtype, one the backend computes in; like() tensors share it;
// wide() tensors (statistics, parameter gradients, rotary tables) hold
// wide_dtype() of it: fp32 for bf16, the compute dtype otherwise.
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "backend/backend.hpp"
#include "backend/observed_op.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace wiola {

// A tensor's shape as messages print it ("4x8"). A value, not a string, so
// that a check's message arguments cost nothing unless the check fails.
struct TensorDims {
  std::int64_t rows, cols;
  friend std::ostream& operator<<(std::ostream& os, const TensorDims& d) {
    return os << d.rows << "x" << d.cols;
  }
};
inline TensorDims dims(const Tensor& t) { return {t.rows(), t.cols()}; }

class OpChecks {
 public:
  OpChecks(Backend& backend, Op op) : backend_(backend), op_(op), name_(op_name(op)) {}

  std::string_view op() const { return name_; }
  DType dtype() const { return dtype_; }

  template <class... What>
  void require(bool ok, What&&... what) const {
    wiola::require(ok, name_, ": ", std::forward<What>(what)...);
  }

  // Runs the checked op's implementation under the backend's observer.
  template <class Implementation>
  void run(Implementation&& implementation) {
    ObservedOp::run(backend_, op_, std::forward<Implementation>(implementation));
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
  // An index tensor: I32 [n, 1], contiguous on every backend (a device
  // kernel reads it as a plain array).
  void index(std::string_view name, const Tensor& t, std::int64_t n) const;
  // x [N, heads·head_dim] with head_dim > 0: returns heads.
  std::int64_t heads(std::string_view name, const Tensor& x, int head_dim) const;

 private:
  Backend& backend_;
  Op op_;
  std::string_view name_;
  DType dtype_ = DType::F32;
  bool has_dtype_ = false;
};

}  // namespace wiola
