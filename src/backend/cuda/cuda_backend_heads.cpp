// CudaBackend: the per-head maps of Wiola 13M's gate (head_mean, head_scale).
#include <string_view>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_checks.hpp"
#include "backend/cuda/kernels/heads.hpp"
#include "core/error.hpp"

namespace wiola::cuda {

void CudaBackend::head_mean_fwd(const Tensor& x, int head_dim, const Tensor& y) {
  const char* op = "head_mean_fwd";
  const DType dt = compute_dtype(op, "x", x);
  check_heads(op, "x", x, head_dim);
  check_exact(op, "y", y, dt, x.rows(), head_dim);
  kernels::head_mean_fwd(x, head_dim, y, stream_);
}

void CudaBackend::head_mean_bwd(const Tensor& dy, int head_dim, const Tensor& dx,
                                bool accumulate) {
  const char* op = "head_mean_bwd";
  const DType dt = compute_dtype(op, "dy", dy);
  check_heads(op, "dx", dx, head_dim);
  check_exact(op, "dy", dy, dt, dx.rows(), head_dim);
  check_exact(op, "dx", dx, dt, dx.rows(), dx.cols());
  kernels::head_mean_bwd(dy, head_dim, dx, accumulate, stream_);
}

void CudaBackend::head_scale_fwd(const Tensor& x, const Tensor& s, int head_dim,
                                 const Tensor& y) {
  const char* op = "head_scale_fwd";
  const DType dt = compute_dtype(op, "x", x);
  const std::int64_t heads = check_heads(op, "x", x, head_dim);
  check_exact(op, "s", s, dt, x.rows(), heads);
  check_exact(op, "y", y, dt, x.rows(), x.cols());
  kernels::head_scale_fwd(x, s, head_dim, y, stream_);
}

void CudaBackend::head_scale_bwd(const Tensor& x, const Tensor& s, const Tensor& dy,
                                 int head_dim, const Tensor& dx, const Tensor& ds) {
  const char* op = "head_scale_bwd";
  const DType dt = compute_dtype(op, "x", x);
  const std::int64_t heads = check_heads(op, "x", x, head_dim);
  check_exact(op, "s", s, dt, x.rows(), heads);
  check_exact(op, "dy", dy, dt, x.rows(), x.cols());
  check_exact(op, "dx", dx, dt, x.rows(), x.cols());
  check_exact(op, "ds", ds, dt, x.rows(), heads);
  kernels::head_scale_bwd(x, s, dy, head_dim, dx, ds, stream_);
}

}  // namespace wiola::cuda
