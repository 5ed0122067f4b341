// CudaBackend: the per-head maps of Wiola 13M's gate (head_mean, head_scale).
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/kernels/heads.hpp"

namespace wiola::cuda {

void CudaBackend::do_head_mean_fwd(const Tensor& x, int head_dim, const Tensor& y) {
  kernels::head_mean_fwd(x, head_dim, y, stream_);
}

void CudaBackend::do_head_mean_bwd(const Tensor& dy, int head_dim, const Tensor& dx,
                                   bool accumulate) {
  kernels::head_mean_bwd(dy, head_dim, dx, accumulate, stream_);
}

void CudaBackend::do_head_scale_fwd(const Tensor& x, const Tensor& s, int head_dim,
                                    const Tensor& y) {
  kernels::head_scale_fwd(x, s, head_dim, y, stream_);
}

void CudaBackend::do_head_scale_bwd(const Tensor& x, const Tensor& s, const Tensor& dy,
                                    int head_dim, const Tensor& dx, const Tensor& ds) {
  kernels::head_scale_bwd(x, s, dy, head_dim, dx, ds, stream_);
}

}  // namespace wiola::cuda
