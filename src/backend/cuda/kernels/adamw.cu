#include "backend/cuda/kernels/adamw.hpp"
#include "backend/cuda/kernels/common.cuh"

namespace wiola::cuda::kernels {

namespace {

struct Hyper {
  double lr, beta1, beta2, eps, weight_decay, grad_scale, bc1, bc2;
};

template <class T>
__global__ void adamw_kernel(std::int64_t n, Hyper h, T* param, const T* grad, T* m, T* v) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const double g = static_cast<double>(grad[i]) * h.grad_scale;
    const double mv = h.beta1 * static_cast<double>(m[i]) + (1.0 - h.beta1) * g;
    const double vv = h.beta2 * static_cast<double>(v[i]) + (1.0 - h.beta2) * g * g;
    const double p = static_cast<double>(param[i]);
    const double update = (mv / h.bc1) / (sqrt(vv / h.bc2) + h.eps) + h.weight_decay * p;
    m[i] = static_cast<T>(mv);
    v[i] = static_cast<T>(vv);
    param[i] = static_cast<T>(p - h.lr * update);
  }
}

}  // namespace

void adamw_step(const Backend::AdamW& a, const Tensor& param, const Tensor& grad, const Tensor& m,
                const Tensor& v, Stream s) {
  const std::int64_t n = param.numel();
  if (n == 0) return;
  const Hyper h{a.lr,
                a.beta1,
                a.beta2,
                a.eps,
                a.weight_decay,
                a.grad_scale,
                1.0 - std::pow(a.beta1, static_cast<double>(a.step)),
                1.0 - std::pow(a.beta2, static_cast<double>(a.step))};
  auto stream = static_cast<cudaStream_t>(s);
  if (param.dtype() == DType::F64)
    WIOLA_LAUNCH(adamw_kernel<double>, dim3(blocks_for(n)), dim3(kThreads), 0, stream)(
        n, h, static_cast<double*>(param.data()), static_cast<const double*>(grad.data()),
        static_cast<double*>(m.data()), static_cast<double*>(v.data()));
  else
    WIOLA_LAUNCH(adamw_kernel<float>, dim3(blocks_for(n)), dim3(kThreads), 0, stream)(
        n, h, static_cast<float*>(param.data()), static_cast<const float*>(grad.data()),
        static_cast<float*>(m.data()), static_cast<float*>(v.data()));
  WIOLA_CHECK_LAUNCH("adamw_kernel");
}

}  // namespace wiola::cuda::kernels
