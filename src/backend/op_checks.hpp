#pragma once
// The argument checks of one op's front (backend_front*.cpp): every failure
// throws wiola::Error naming the op, the tensor and what is wrong with it,
// before a backend sees the call; run() then calls the implementation.
//
// Dtypes: the first floating tensor checked with compute() sets the call's
// compute dtype, one the backend computes in; like() tensors share it;
// wide() tensors (statistics, parameter gradients, rotary tables) hold
// wide_dtype() of it: fp32 for bf16, the compute dtype otherwise.
#include <array>
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
    ObservedOp::run(backend_, op_, std::forward<Implementation>(implementation), operand_bytes_);
  }

  // Defined and in this backend's memory. Every checked tensor passes here:
  // its bytes count once per name into the op's operand bytes
  // (Backend::note_operand_bytes), so an in-place op's view, checked as its
  // input and as its output, counts as read once and written once.
  void tensor(std::string_view name, const Tensor& t) const;
  // An output the op adds into (or updates in place under one name): read
  // as well as written, so its bytes count once more.
  void accumulates(const Tensor& t) { operand_bytes_ += static_cast<std::int64_t>(t.bytes()); }
  // A checked operand of which the op touches at most `rows` rows (the rows
  // an index selects: a gather's table, a rotary table): only those count.
  void touches_rows(const Tensor& t, std::int64_t rows) {
    if (rows < t.rows())
      operand_bytes_ -= (t.rows() - rows) * t.cols() * static_cast<std::int64_t>(dtype_size(t.dtype()));
  }
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
  // The distinct (name, view) pairs checked so far and their bytes. A fixed
  // array: no allocation per op (the most operands an op has is about 50,
  // attention's backward with 8 summaries); past it, views count without
  // the check.
  // Trivial, so that the array costs nothing to set up.
  // The operand's name enters as its hash: a name may be a temporary
  // ("ctx_k[2]") that is gone by the next operand's check.
  struct View {
    std::size_t name_hash;
    const void* data;
    std::int64_t rows, cols, ld;
    DType dtype;
    bool operator==(const View& o) const {
      return data == o.data && rows == o.rows && cols == o.cols && ld == o.ld &&
             dtype == o.dtype && name_hash == o.name_hash;
    }
  };
  mutable std::array<View, 64> operands_;
  mutable std::size_t n_operands_ = 0;
  mutable std::int64_t operand_bytes_ = 0;
};

}  // namespace wiola
