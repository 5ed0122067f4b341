// Per-head maps: grid-stride loops. The mean and the scale's backward give
// each (row, column) or (row, head) to one thread, which sums over the heads
// or the head's columns in order in fp32.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/heads.hpp"

namespace wiola::cuda::kernels {

namespace {

template <class T>
__global__ void head_mean_fwd_kernel(std::int64_t n, int heads, int dh, const T* x,
                                     std::int64_t ldx, T* y, std::int64_t ldy) {
  const std::int64_t total = n * dh;
  const float inv = 1.0f / static_cast<float>(heads);
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = e / dh, j = e % dh;
    float acc = 0.0f;
    for (int h = 0; h < heads; ++h) acc += to_float(x[i * ldx + std::int64_t(h) * dh + j]);
    y[i * ldy + j] = from_float<T>(acc * inv);
  }
}

template <class T>
__global__ void head_mean_bwd_kernel(std::int64_t n, int heads, int dh, const T* dy,
                                     std::int64_t lddy, T* dx, std::int64_t lddx,
                                     bool accumulate) {
  const std::int64_t width = std::int64_t(heads) * dh, total = n * width;
  const float inv = 1.0f / static_cast<float>(heads);
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = e / width, c = e % width;
    const float g = to_float(dy[i * lddy + c % dh]) * inv;
    T* out = dx + i * lddx + c;
    *out = from_float<T>(accumulate ? to_float(*out) + g : g);
  }
}

template <class T>
__global__ void head_scale_fwd_kernel(std::int64_t n, int heads, int dh, const T* x,
                                      std::int64_t ldx, const T* s, std::int64_t lds, T* y,
                                      std::int64_t ldy) {
  const std::int64_t width = std::int64_t(heads) * dh, total = n * width;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = e / width, c = e % width;
    y[i * ldy + c] = from_float<T>(to_float(s[i * lds + c / dh]) * to_float(x[i * ldx + c]));
  }
}

template <class T>
__global__ void head_scale_bwd_kernel(std::int64_t n, int heads, int dh, const T* x,
                                      std::int64_t ldx, const T* s, std::int64_t lds,
                                      const T* dy, std::int64_t lddy, T* dx, std::int64_t lddx,
                                      T* ds, std::int64_t ldds) {
  const std::int64_t total = n * heads;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = e / heads, h = e % heads;
    const T* xh = x + i * ldx + h * dh;
    const T* gh = dy + i * lddy + h * dh;
    T* oh = dx + i * lddx + h * dh;
    float acc = 0.0f;
    for (int j = 0; j < dh; ++j) acc += to_float(gh[j]) * to_float(xh[j]);
    const float f = to_float(s[i * lds + h]);
    ds[i * ldds + h] = from_float<T>(acc);
    for (int j = 0; j < dh; ++j) oh[j] = from_float<T>(f * to_float(gh[j]));
  }
}

}  // namespace

void head_mean_fwd(const Tensor& x, int head_dim, const Tensor& y, Stream s) {
  const std::int64_t total = y.rows() * head_dim;
  if (total == 0) return;
  const int heads = static_cast<int>(x.cols() / head_dim);
  with_compute_type(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    WIOLA_LAUNCH(head_mean_fwd_kernel<T>, dim3(blocks_for(total)), dim3(kThreads), 0,
                 static_cast<cudaStream_t>(s))(x.rows(), heads, head_dim,
                                               static_cast<const T*>(x.data()), x.ld(),
                                               static_cast<T*>(y.data()), y.ld());
  });
  WIOLA_CHECK_LAUNCH("head_mean_fwd_kernel", bytes_of(x) + bytes_of(y));
}

void head_mean_bwd(const Tensor& dy, int head_dim, const Tensor& dx, bool accumulate, Stream s) {
  const std::int64_t total = dx.numel();
  if (total == 0) return;
  const int heads = static_cast<int>(dx.cols() / head_dim);
  with_compute_type(dy.dtype(), [&](auto zero) {
    using T = decltype(zero);
    WIOLA_LAUNCH(head_mean_bwd_kernel<T>, dim3(blocks_for(total)), dim3(kThreads), 0,
                 static_cast<cudaStream_t>(s))(dx.rows(), heads, head_dim,
                                               static_cast<const T*>(dy.data()), dy.ld(),
                                               static_cast<T*>(dx.data()), dx.ld(), accumulate);
  });
  WIOLA_CHECK_LAUNCH("head_mean_bwd_kernel", bytes_of(dy) + (accumulate ? 2 : 1) * bytes_of(dx));
}

void head_scale_fwd(const Tensor& x, const Tensor& scale, int head_dim, const Tensor& y,
                    Stream s) {
  const std::int64_t total = x.numel();
  if (total == 0) return;
  const int heads = static_cast<int>(x.cols() / head_dim);
  with_compute_type(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    WIOLA_LAUNCH(head_scale_fwd_kernel<T>, dim3(blocks_for(total)), dim3(kThreads), 0,
                 static_cast<cudaStream_t>(s))(
        x.rows(), heads, head_dim, static_cast<const T*>(x.data()), x.ld(),
        static_cast<const T*>(scale.data()), scale.ld(), static_cast<T*>(y.data()), y.ld());
  });
  WIOLA_CHECK_LAUNCH("head_scale_fwd_kernel", bytes_of(x) + bytes_of(scale) + bytes_of(y));
}

void head_scale_bwd(const Tensor& x, const Tensor& scale, const Tensor& dy, int head_dim,
                    const Tensor& dx, const Tensor& ds, Stream s) {
  const int heads = static_cast<int>(x.cols() / head_dim);
  const std::int64_t total = x.rows() * heads;
  if (total == 0) return;
  with_compute_type(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    WIOLA_LAUNCH(head_scale_bwd_kernel<T>, dim3(blocks_for(total)), dim3(kThreads), 0,
                 static_cast<cudaStream_t>(s))(
        x.rows(), heads, head_dim, static_cast<const T*>(x.data()), x.ld(),
        static_cast<const T*>(scale.data()), scale.ld(), static_cast<const T*>(dy.data()),
        dy.ld(), static_cast<T*>(dx.data()), dx.ld(), static_cast<T*>(ds.data()), ds.ld());
  });
  WIOLA_CHECK_LAUNCH("head_scale_bwd_kernel", bytes_of(x) + bytes_of(scale) + bytes_of(dy) +
                                                  bytes_of(dx) + bytes_of(ds));
}

}  // namespace wiola::cuda::kernels
