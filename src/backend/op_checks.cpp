#include "backend/op_checks.hpp"

#include <functional>

namespace wiola {

namespace {

const char* device_name(Device d) { return d == Device::CPU ? "CPU" : "CUDA"; }

// "fp32 or fp64": the dtypes a backend computes in, written only when a
// message is.
struct ComputeDtypes {
  const Backend& backend;
  friend std::ostream& operator<<(std::ostream& os, const ComputeDtypes& c) {
    const char* sep = "";
    for (DType d : {DType::BF16, DType::F32, DType::F64})
      if (c.backend.computes_in(d)) {
        os << sep << dtype_name(d);
        sep = " or ";
      }
    return os;
  }
};

}  // namespace

void OpChecks::tensor(std::string_view name, const Tensor& t) const {
  require(t.defined(), name, " is an undefined tensor");
  require(t.device() == backend_.device(), name, " is a ", device_name(t.device()),
          " tensor, not one of the ", backend_.name(), " backend");
  const View v{std::hash<std::string_view>{}(name), t.data(), t.rows(), t.cols(), t.ld(),
               t.dtype()};
  for (std::size_t i = 0; i < n_operands_; ++i)
    if (operands_[i] == v) return;
  if (n_operands_ < operands_.size()) operands_[n_operands_++] = v;
  operand_bytes_ += static_cast<std::int64_t>(t.bytes());
}

void OpChecks::shape(std::string_view name, const Tensor& t, std::int64_t rows,
                     std::int64_t cols) const {
  require(t.rows() == rows && t.cols() == cols, name, " is ", dims(t), ", expected ", rows, "x",
          cols);
}

DType OpChecks::compute(std::string_view name, const Tensor& t) {
  tensor(name, t);
  require(t.dtype() != DType::I32 && backend_.computes_in(t.dtype()), name, " is ",
          dtype_name(t.dtype()), "; the ", backend_.name(), " backend computes in ",
          ComputeDtypes{backend_});
  dtype_ = t.dtype();
  has_dtype_ = true;
  return dtype_;
}

void OpChecks::like(std::string_view name, const Tensor& t, std::int64_t rows,
                    std::int64_t cols) const {
  exact(name, t, dtype_, rows, cols);
}

void OpChecks::wide(std::string_view name, const Tensor& t, std::int64_t rows,
                    std::int64_t cols) const {
  exact(name, t, wide_dtype(dtype_), rows, cols);
}

void OpChecks::exact(std::string_view name, const Tensor& t, DType dtype, std::int64_t rows,
                     std::int64_t cols) const {
  tensor(name, t);
  require(t.dtype() == dtype, name, " is ", dtype_name(t.dtype()), ", expected ", dtype_name(dtype),
          has_dtype_ ? " (by the call's compute dtype)" : "");
  shape(name, t, rows, cols);
}

void OpChecks::index(std::string_view name, const Tensor& t, std::int64_t n) const {
  tensor(name, t);
  require(t.dtype() == DType::I32, name, " is ", dtype_name(t.dtype()), ", expected i32");
  shape(name, t, n, 1);
  require(t.contiguous() || n <= 1, name, " must be contiguous");
}

std::int64_t OpChecks::heads(std::string_view name, const Tensor& x, int head_dim) const {
  require(head_dim > 0, "head_dim ", head_dim, " must be positive");
  require(x.cols() > 0 && x.cols() % head_dim == 0, name, " is ", dims(x),
          ", whose width is not a positive multiple of head_dim ", head_dim);
  return x.cols() / head_dim;
}

}  // namespace wiola
