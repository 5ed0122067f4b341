// CpuBackend: the per-head maps of Wiola 13M's gate (head_mean, head_scale).
#include <string_view>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/cpu_checks.hpp"
#include "ops/heads.hpp"

namespace wiola {

using namespace cpu;

void CpuBackend::head_mean_fwd(const Tensor& x, int head_dim, const Tensor& y) {
  const char* op = "head_mean_fwd";
  const DType dt = float_dtype(op, "x", x);
  const std::int64_t heads = check_heads(op, "x", x, head_dim);
  check_float(op, "y", y, dt, x.rows(), head_dim);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::head_mean_fwd<T>(x.rows(), heads, head_dim, x.ptr<T>(), x.ld(), y.ptr<T>(), y.ld());
  });
}

void CpuBackend::head_mean_bwd(const Tensor& dy, int head_dim, const Tensor& dx,
                               bool accumulate) {
  const char* op = "head_mean_bwd";
  const DType dt = float_dtype(op, "dy", dy);
  const std::int64_t heads = check_heads(op, "dx", dx, head_dim);
  check_float(op, "dy", dy, dt, dx.rows(), head_dim);
  check_dtype(op, "dx", dx, dt);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::head_mean_bwd<T>(dx.rows(), heads, head_dim, dy.ptr<T>(), dy.ld(), dx.ptr<T>(), dx.ld(),
                          accumulate);
  });
}

void CpuBackend::head_scale_fwd(const Tensor& x, const Tensor& s, int head_dim,
                                const Tensor& y) {
  const char* op = "head_scale_fwd";
  const DType dt = float_dtype(op, "x", x);
  const std::int64_t heads = check_heads(op, "x", x, head_dim);
  check_float(op, "s", s, dt, x.rows(), heads);
  check_float(op, "y", y, dt, x.rows(), x.cols());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::head_scale_fwd<T>(x.rows(), heads, head_dim, x.ptr<T>(), x.ld(), s.ptr<T>(), s.ld(),
                           y.ptr<T>(), y.ld());
  });
}

void CpuBackend::head_scale_bwd(const Tensor& x, const Tensor& s, const Tensor& dy, int head_dim,
                                const Tensor& dx, const Tensor& ds) {
  const char* op = "head_scale_bwd";
  const DType dt = float_dtype(op, "x", x);
  const std::int64_t heads = check_heads(op, "x", x, head_dim);
  check_float(op, "s", s, dt, x.rows(), heads);
  check_float(op, "dy", dy, dt, x.rows(), x.cols());
  check_float(op, "dx", dx, dt, x.rows(), x.cols());
  check_float(op, "ds", ds, dt, x.rows(), heads);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::head_scale_bwd<T>(x.rows(), heads, head_dim, x.ptr<T>(), x.ld(), s.ptr<T>(), s.ld(),
                           dy.ptr<T>(), dy.ld(), dx.ptr<T>(), dx.ld(), ds.ptr<T>(), ds.ld());
  });
}

}  // namespace wiola
