// The fronts of the memory, elementwise, reduction, linear and optimizer ops:
// each checks its arguments once for every backend, then runs the backend's
// implementation under the observer.
#include <cmath>
#include <limits>

#include "backend/backend.hpp"
#include "backend/observed_op.hpp"
#include "backend/op_checks.hpp"

namespace wiola {

// ---- memory -----------------------------------------------------------------

namespace {

void check_alloc(const Backend& be, const char* op, DType dtype, std::int64_t rows,
                 std::int64_t cols) {
  require(rows >= 0 && cols >= 0, op, ": negative shape ", rows, "x", cols);
  require(
      dtype == DType::I32 || dtype == DType::F32 || dtype == DType::F64 || be.computes_in(dtype),
      op, ": the ", be.name(), " backend holds no ", dtype_name(dtype), " tensors");
}

}  // namespace

std::unique_ptr<DeviceGraph> Backend::capture(const std::function<void()>&) {
  fail("backend ", name(), " records no graphs");
}

Tensor Backend::alloc(DType dtype, std::int64_t rows, std::int64_t cols) {
  check_alloc(*this, "alloc", dtype, rows, cols);
  return do_alloc(dtype, rows, cols);
}

Tensor Backend::alloc_uninit(DType dtype, std::int64_t rows, std::int64_t cols) {
  check_alloc(*this, "alloc_uninit", dtype, rows, cols);
  return do_alloc_uninit(dtype, rows, cols);
}

void Backend::fill(const Tensor& t, double value) {
  OpChecks c(*this, Op::fill);
  c.tensor("t", t);
  if (t.dtype() == DType::I32)
    c.require(std::trunc(value) == value && value >= std::numeric_limits<std::int32_t>::min() &&
                  value <= std::numeric_limits<std::int32_t>::max(),
              value, " is not an i32 value");
  c.run([&] { do_fill(t, value); });
}

void Backend::copy(const Tensor& src, const Tensor& dst) {
  OpChecks c(*this, Op::copy);
  c.tensor("src", src);
  c.tensor("dst", dst);
  c.require(src.dtype() == dst.dtype(), "src is ", dtype_name(src.dtype()), " but dst is ",
            dtype_name(dst.dtype()), " (use convert)");
  c.shape("dst", dst, src.rows(), src.cols());
  c.run([&] { do_copy(src, dst); });
}

void Backend::convert(const Tensor& src, const Tensor& dst) {
  OpChecks c(*this, Op::convert);
  c.tensor("src", src);
  c.tensor("dst", dst);
  c.shape("dst", dst, src.rows(), src.cols());
  c.require((src.dtype() == DType::I32) == (dst.dtype() == DType::I32), dtype_name(src.dtype()),
            " to ", dtype_name(dst.dtype()), " (only floating types convert into each other)");
  c.run([&] { do_convert(src, dst); });
}

void Backend::to_host(const Tensor& src, void* dst) {
  OpChecks c(*this, Op::to_host);
  c.tensor("src", src);
  c.require(src.contiguous(), "src ", dims(src), " is a strided view (ld ", src.ld(),
            "); copy it to a contiguous tensor first");
  c.run([&] { do_to_host(src, dst); });
}

void Backend::from_host(const void* src, const Tensor& dst) {
  OpChecks c(*this, Op::from_host);
  c.tensor("dst", dst);
  c.require(dst.contiguous(), "dst ", dims(dst), " is a strided view (ld ", dst.ld(), ")");
  c.run([&] { do_from_host(src, dst); });
}

void Backend::copy_to_host(const void* src, void* host_dst, std::size_t bytes) {
  ObservedOp::run(*this, Op::copy_to_host, [&] { do_copy_to_host(src, host_dst, bytes); });
}

void Backend::copy_from_host(const void* host_src, void* dst, std::size_t bytes) {
  ObservedOp::run(*this, Op::copy_from_host, [&] { do_copy_from_host(host_src, dst, bytes); });
}

// ---- elementwise and reductions ---------------------------------------------------

void Backend::add(const Tensor& a, const Tensor& b, const Tensor& out) {
  OpChecks c(*this, Op::add);
  c.compute("a", a);
  c.like("b", b, a.rows(), a.cols());
  c.like("out", out, a.rows(), a.cols());
  c.run([&] { do_add(a, b, out); });
}

void Backend::axpy(double alpha, const Tensor& x, const Tensor& y) {
  OpChecks c(*this, Op::axpy);
  c.compute("x", x);
  c.like("y", y, x.rows(), x.cols());
  c.accumulates(y);
  c.run([&] { do_axpy(alpha, x, y); });
}

void Backend::scale(const Tensor& x, double alpha) {
  OpChecks c(*this, Op::scale);
  c.compute("x", x);
  c.accumulates(x);
  c.run([&] { do_scale(x, alpha); });
}

namespace {

void check_reduction(OpChecks& c, const Tensor& x, const Tensor& acc) {
  c.tensor("x", x);
  c.require(x.dtype() != DType::I32, "x is i32; it must be floating");
  c.tensor("acc", acc);
  c.require(acc.dtype() == DType::F64 && acc.rows() == 1 && acc.cols() == 1,
            "the accumulator must be an f64 [1, 1] tensor, got ", dtype_name(acc.dtype()), " ",
            dims(acc));
  c.accumulates(acc);
}

}  // namespace

void Backend::sum(const Tensor& x, const Tensor& acc) {
  OpChecks c(*this, Op::sum);
  check_reduction(c, x, acc);
  c.run([&] { do_sum(x, acc); });
}

void Backend::sum_squares(const Tensor& x, const Tensor& acc) {
  OpChecks c(*this, Op::sum_squares);
  check_reduction(c, x, acc);
  c.run([&] { do_sum_squares(x, acc); });
}

// ---- linear -------------------------------------------------------------------------

namespace {

// y = x·wᵀ and dx = dy·w, whole or over a stacked w.
void check_linear_fwd(OpChecks& c, const Tensor& x, const Tensor& w, const Tensor& y) {
  c.compute("x", x);
  c.require(w.cols() == x.cols(), "x is ", dims(x), " but w is ", dims(w), " (w must be [out, ",
            x.cols(), "])");
  c.like("w", w, w.rows(), x.cols());
  c.like("y", y, x.rows(), w.rows());
}
void check_linear_bwd_data(OpChecks& c, const Tensor& dy, const Tensor& w, const Tensor& dx) {
  c.compute("dy", dy);
  c.require(w.rows() == dy.cols(), "dy is ", dims(dy), " but w is ", dims(w), " (w must be [",
            dy.cols(), ", in])");
  c.like("w", w, dy.cols(), w.cols());
  c.like("dx", dx, dy.rows(), w.cols());
}

// The parts of a stacked weight: positive, and w's rows in all.
void check_parts(OpChecks& c, std::span<const std::int64_t> part_rows, const Tensor& w) {
  std::int64_t total = 0;
  for (const std::int64_t rows : part_rows) {
    c.require(rows > 0, "a part of ", rows, " rows");
    total += rows;
  }
  c.require(!part_rows.empty() && total == w.rows(), "the parts have ", total,
            " rows in all but w has ", w.rows());
}

}  // namespace

void Backend::linear_fwd(const Tensor& x, const Tensor& w, const Tensor& y, bool accumulate) {
  OpChecks c(*this, Op::linear_fwd);
  check_linear_fwd(c, x, w, y);
  c.run([&] { do_linear_fwd(x, w, y, accumulate); });
}

void Backend::linear_bwd_data(const Tensor& dy, const Tensor& w, const Tensor& dx,
                              bool accumulate) {
  OpChecks c(*this, Op::linear_bwd_data);
  check_linear_bwd_data(c, dy, w, dx);
  c.run([&] { do_linear_bwd_data(dy, w, dx, accumulate); });
}

void Backend::linear_fwd_stacked(const Tensor& x, const Tensor& w,
                                 std::span<const std::int64_t> part_rows, const Tensor& y) {
  OpChecks c(*this, Op::linear_fwd_stacked);
  check_linear_fwd(c, x, w, y);
  check_parts(c, part_rows, w);
  c.run([&] { do_linear_fwd_stacked(x, w, part_rows, y); });
}

void Backend::linear_bwd_data_stacked(const Tensor& dy, const Tensor& w,
                                      std::span<const std::int64_t> part_rows, const Tensor& dx,
                                      bool accumulate) {
  OpChecks c(*this, Op::linear_bwd_data_stacked);
  check_linear_bwd_data(c, dy, w, dx);
  check_parts(c, part_rows, w);
  c.run([&] { do_linear_bwd_data_stacked(dy, w, part_rows, dx, accumulate); });
}

void Backend::linear_bwd_weight(const Tensor& dy, const Tensor& x, const Tensor& dw) {
  OpChecks c(*this, Op::linear_bwd_weight);
  c.compute("dy", dy);
  c.require(x.rows() == dy.rows(), "dy is ", dims(dy), " but x is ", dims(x),
            " (both need the same rows)");
  c.like("x", x, dy.rows(), x.cols());
  c.wide("dw", dw, dy.cols(), x.cols());
  c.run([&] { do_linear_bwd_weight(dy, x, dw); });
}

// ---- optimizer -------------------------------------------------------------------------

void Backend::adamw_step(const AdamW& h, const Tensor& param, const Tensor& grad, const Tensor& m,
                         const Tensor& v) {
  OpChecks c(*this, Op::adamw_step);
  c.tensor("param", param);
  c.require(param.dtype() == DType::F32 || param.dtype() == DType::F64,
            "master weights must be fp32 (or fp64), got ", dtype_name(param.dtype()));
  c.exact("grad", grad, param.dtype(), param.rows(), param.cols());
  c.exact("m", m, param.dtype(), param.rows(), param.cols());
  c.exact("v", v, param.dtype(), param.rows(), param.cols());
  for (const auto& [name, t] : {std::pair{"param", &param}, {"grad", &grad}, {"m", &m}, {"v", &v}})
    c.require(t->contiguous(), name, " ", dims(*t), " is a strided view; the optimizer steps ",
              "contiguous ranges");
  c.require(h.step >= 1, "step ", h.step, " must be >= 1 (it is 1-based)");
  for (const Tensor* updated : {&param, &m, &v}) c.accumulates(*updated);
  c.run([&] { do_adamw_step(h, param, grad, m, v); });
}

}  // namespace wiola
