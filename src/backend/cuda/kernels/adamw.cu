// AdamW on contiguous ranges (the optimizer's shard of the flat parameter
// buffer): fp64 arithmetic per element, fp32 or fp64 storage.
#include <cstdint>
#include <initializer_list>

#include "backend/cuda/kernels/adamw.hpp"
#include "backend/cuda/kernels/common.cuh"

namespace wiola::cuda::kernels {

namespace {

struct Hyper {
  double lr, beta1, beta2, eps, weight_decay, grad_scale, bc1, bc2;
};

// One element's update, in fp64 whatever the storage.
template <class T>
__device__ __forceinline__ void adamw_update(const Hyper& h, T& param, T grad, T& m, T& v) {
  const double g = static_cast<double>(grad) * h.grad_scale;
  const double mv = h.beta1 * static_cast<double>(m) + (1.0 - h.beta1) * g;
  const double vv = h.beta2 * static_cast<double>(v) + (1.0 - h.beta2) * g * g;
  const double p = static_cast<double>(param);
  const double update = (mv / h.bc1) / (sqrt(vv / h.bc2) + h.eps) + h.weight_decay * p;
  m = static_cast<T>(mv);
  v = static_cast<T>(vv);
  param = static_cast<T>(p - h.lr * update);
}

template <class T>
__global__ void adamw_kernel(std::int64_t n, Hyper h, T* param, const T* grad, T* m, T* v) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    adamw_update(h, param[i], grad[i], m[i], v[i]);
}

// Elements per thread of the chunked kernel: one 16-byte access per array.
template <class T>
constexpr int kAdamWidth = 16 / static_cast<int>(sizeof(T));

// The same update with 16-byte loads and stores of each array (4 fp32 or 2
// fp64 values per thread); used when every array starts 16-byte aligned and
// the range holds whole chunks (ZeRO cuts shards at multiples of 128).
template <class T>
__global__ void adamw_chunks_kernel(std::int64_t chunks, Hyper h, T* param, const T* grad, T* m,
                                    T* v) {
  constexpr int W = kAdamWidth<T>;
  using C = Chunk<T, W>;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < chunks;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    C p = reinterpret_cast<C*>(param)[i], mm = reinterpret_cast<C*>(m)[i],
      vv = reinterpret_cast<C*>(v)[i];
    const C g = reinterpret_cast<const C*>(grad)[i];
    WIOLA_UNROLL
    for (int j = 0; j < W; ++j) adamw_update(h, p.v[j], g.v[j], mm.v[j], vv.v[j]);
    reinterpret_cast<C*>(param)[i] = p;
    reinterpret_cast<C*>(m)[i] = mm;
    reinterpret_cast<C*>(v)[i] = vv;
  }
}

// Launches the chunked kernel where it applies, else the element one;
// returns the name of the kernel launched.
template <class T>
const char* launch_adamw(std::int64_t n, const Hyper& h, const Tensor& param, const Tensor& grad,
                         const Tensor& m, const Tensor& v, cudaStream_t stream) {
  constexpr int W = kAdamWidth<T>;
  auto* pp = static_cast<T*>(param.data());
  auto* gp = static_cast<const T*>(grad.data());
  auto* mp = static_cast<T*>(m.data());
  auto* vp = static_cast<T*>(v.data());
  bool chunked = n % W == 0;
  for (const void* ptr : {static_cast<const void*>(pp), static_cast<const void*>(gp),
                          static_cast<const void*>(mp), static_cast<const void*>(vp)})
    chunked = chunked && reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0;
  if (chunked) {
    WIOLA_LAUNCH(adamw_chunks_kernel<T>, dim3(blocks_for(n / W)), dim3(kThreads), 0, stream)(
        n / W, h, pp, gp, mp, vp);
    return "adamw_chunks_kernel";
  }
  WIOLA_LAUNCH(adamw_kernel<T>, dim3(blocks_for(n)), dim3(kThreads), 0, stream)(n, h, pp, gp, mp,
                                                                                 vp);
  return "adamw_kernel";
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
  const char* kernel = param.dtype() == DType::F64
                           ? launch_adamw<double>(n, h, param, grad, m, v, stream)
                           : launch_adamw<float>(n, h, param, grad, m, v, stream);
  // The gradient read; the parameter and both moments read and written.
  WIOLA_CHECK_LAUNCH(kernel, bytes_of(grad) + 2 * (bytes_of(param) + bytes_of(m) + bytes_of(v)));
}

}  // namespace wiola::cuda::kernels
