// CpuBackend: the per-head maps of Wiola 13M's gate (head_mean, head_scale).
#include <string_view>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/cpu_checks.hpp"
#include "ops/heads.hpp"

namespace wiola {

using namespace cpu;

void CpuBackend::do_head_mean_fwd(const Tensor& x, int head_dim, const Tensor& y) {
  const DType dt = x.dtype();
  const std::int64_t heads = x.cols() / head_dim;
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::head_mean_fwd<T>(x.rows(), heads, head_dim, x.ptr<T>(), x.ld(), y.ptr<T>(), y.ld());
  });
}

void CpuBackend::do_head_mean_bwd(const Tensor& dy, int head_dim, const Tensor& dx,
                                  bool accumulate) {
  const DType dt = dy.dtype();
  const std::int64_t heads = dx.cols() / head_dim;
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::head_mean_bwd<T>(dx.rows(), heads, head_dim, dy.ptr<T>(), dy.ld(), dx.ptr<T>(), dx.ld(),
                          accumulate);
  });
}

void CpuBackend::do_head_scale_fwd(const Tensor& x, const Tensor& s, int head_dim,
                                   const Tensor& y) {
  const DType dt = x.dtype();
  const std::int64_t heads = x.cols() / head_dim;
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::head_scale_fwd<T>(x.rows(), heads, head_dim, x.ptr<T>(), x.ld(), s.ptr<T>(), s.ld(),
                           y.ptr<T>(), y.ld());
  });
}

void CpuBackend::do_head_scale_bwd(const Tensor& x, const Tensor& s, const Tensor& dy, int head_dim,
                                   const Tensor& dx, const Tensor& ds) {
  const DType dt = x.dtype();
  const std::int64_t heads = x.cols() / head_dim;
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::head_scale_bwd<T>(x.rows(), heads, head_dim, x.ptr<T>(), x.ld(), s.ptr<T>(), s.ld(),
                           dy.ptr<T>(), dy.ld(), dx.ptr<T>(), dx.ld(), ds.ptr<T>(), ds.ld());
  });
}

}  // namespace wiola
