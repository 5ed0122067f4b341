// WRMSNorm: one block per row in the forward pass; in the backward pass one
// block per chunk of kNormRowChunk rows (row dot products by block_sum, the
// chunk's parameter-gradient partial sums in registers), then one pass that
// adds the chunks' partials in chunk order. Each thread keeps the columns
// j = threadIdx.x + k·blockDim.x (k < kNormPerThread) of a row in registers.
// A null δ is plain RMSNorm (no shift, and no ddelta to add to).
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/wrmsnorm.hpp"

namespace wiola::cuda::kernels {

namespace {

constexpr int kPer = static_cast<int>(kNormPerThread);

// Enough threads that kPer columns each cover d (d <= kNormMaxCols, so at
// most kNormMaxThreads), at least a warp, and up to 256 when the row has
// that many columns.
unsigned norm_threads(std::int64_t d) {
  auto round32 = [](std::int64_t v) { return (v + 31) / 32 * 32; };
  std::int64_t t = round32((d + kPer - 1) / kPer);
  const std::int64_t floor = round32(d) < 256 ? round32(d) : 256;
  if (t < floor) t = floor;
  if (t < 32) t = 32;
  return static_cast<unsigned>(t);
}

// With a residual `res`: the row is x + res, rounded to T and written to `sum`
// (as the add op would), and normalised from there.
template <class T>
__global__ void __launch_bounds__(kNormMaxThreads)
    wrmsnorm_fwd_kernel(int d, const T* x, std::int64_t ldx, const T* res, std::int64_t ldres,
                        T* sum, std::int64_t ldsum, const T* gamma, const T* delta, float eps,
                        T* y, std::int64_t ldy, float* rstd, std::int64_t ldr) {
  __shared__ float scratch[32];
  const std::int64_t i = blockIdx.x;
  const T* xi = x + i * ldx;
  float z[kPer];
  float ss = 0.0f;
  WIOLA_UNROLL
  for (int k = 0; k < kPer; ++k) {
    const int j = threadIdx.x + k * blockDim.x;
    float v = 0.0f;
    if (j < d) {
      v = to_float(xi[j]);
      if (res) {
        const T s = from_float<T>(v + to_float(res[i * ldres + j]));
        sum[i * ldsum + j] = s;
        v = to_float(s);
      }
    }
    z[k] = j < d ? v + (delta ? to_float(delta[j]) : 0.0f) : 0.0f;
    ss += z[k] * z[k];
  }
  ss = block_sum(ss, scratch);
  const float r = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
  T* yi = y + i * ldy;
  WIOLA_UNROLL
  for (int k = 0; k < kPer; ++k) {
    const int j = threadIdx.x + k * blockDim.x;
    if (j < d) yi[j] = from_float<T>(to_float(gamma[j]) * (z[k] * r));
  }
  if (threadIdx.x == 0) rstd[i * ldr] = r;
}

// With g_j = γ_j dy_j: dz_j = r g_j − z_j r³ (Σ_k g_k z_k) / d.
template <class T>
__global__ void __launch_bounds__(kNormMaxThreads)
    wrmsnorm_bwd_rows(std::int64_t n, int d, const T* x, std::int64_t ldx, const T* gamma,
                      const T* delta, const float* rstd, std::int64_t ldr, const T* dy,
                      std::int64_t lddy, T* dx, std::int64_t lddx, bool accumulate,
                      float* partial) {
  __shared__ float scratch[32];
  const std::int64_t r0 = std::int64_t(blockIdx.x) * kNormRowChunk;
  const std::int64_t r1 = r0 + kNormRowChunk < n ? r0 + kNormRowChunk : n;
  float gam[kPer], del[kPer], pg[kPer], pd[kPer];
  WIOLA_UNROLL
  for (int k = 0; k < kPer; ++k) {
    const int j = threadIdx.x + k * blockDim.x;
    gam[k] = j < d ? to_float(gamma[j]) : 0.0f;
    del[k] = j < d && delta ? to_float(delta[j]) : 0.0f;
    pg[k] = 0.0f;
    pd[k] = 0.0f;
  }
  for (std::int64_t i = r0; i < r1; ++i) {
    const float r = rstd[i * ldr];
    float z[kPer], g[kPer];
    float dot = 0.0f;
    WIOLA_UNROLL
    for (int k = 0; k < kPer; ++k) {
      const int j = threadIdx.x + k * blockDim.x;
      z[k] = j < d ? to_float(x[i * ldx + j]) + del[k] : 0.0f;
      g[k] = j < d ? to_float(dy[i * lddy + j]) : 0.0f;
      dot += gam[k] * g[k] * z[k];
    }
    dot = block_sum(dot, scratch);
    const float coef = r * r * r * dot / static_cast<float>(d);
    T* dxi = dx + i * lddx;
    WIOLA_UNROLL
    for (int k = 0; k < kPer; ++k) {
      const int j = threadIdx.x + k * blockDim.x;
      if (j >= d) continue;
      const float dz = r * gam[k] * g[k] - z[k] * coef;
      pg[k] += g[k] * z[k] * r;
      pd[k] += dz;
      dxi[j] = from_float<T>(accumulate ? to_float(dxi[j]) + dz : dz);
    }
  }
  float* out = partial + std::int64_t(blockIdx.x) * 2 * d;
  WIOLA_UNROLL
  for (int k = 0; k < kPer; ++k) {
    const int j = threadIdx.x + k * blockDim.x;
    if (j < d) {
      out[j] = pg[k];
      out[d + j] = pd[k];
    }
  }
}

constexpr int kSlices = 8;  // chunk slices per column in the second pass

// Column c of the 2d partial columns (dgamma's d, then ddelta's d): slice s
// adds chunks s, s + kSlices, ... in order; slice 0 adds the slices in order.
__global__ void wrmsnorm_bwd_params(std::int64_t chunks, int d, const float* partial,
                                    float* dgamma, float* ddelta) {
  __shared__ float part[kSlices][32];
  const int lane = threadIdx.x % 32, slice = threadIdx.x / 32;
  const std::int64_t c = std::int64_t(blockIdx.x) * 32 + lane;
  float sum = 0.0f;
  if (c < 2 * d)
    for (std::int64_t ch = slice; ch < chunks; ch += kSlices) sum += partial[ch * 2 * d + c];
  part[slice][lane] = sum;
  __syncthreads();
  if (slice != 0 || c >= 2 * d || (c >= d && !ddelta)) return;
  float total = 0.0f;
  for (int q = 0; q < kSlices; ++q) total += part[q][lane];
  float* out = c < d ? dgamma + c : ddelta + (c - d);
  *out += total;
}

}  // namespace

namespace {

// `res` and `sum` undefined: the plain norm.
void launch_fwd(const Tensor& x, const Tensor& res, const Tensor& sum, const Tensor& gamma,
                const Tensor& delta, double eps, const Tensor& y, const Tensor& rstd, Stream s) {
  if (x.rows() == 0 || x.cols() == 0) return;
  with_compute_type(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    WIOLA_LAUNCH(wrmsnorm_fwd_kernel<T>, dim3(static_cast<unsigned>(x.rows())),
                 dim3(norm_threads(x.cols())), 0, static_cast<cudaStream_t>(s))(
        static_cast<int>(x.cols()), static_cast<const T*>(x.data()), x.ld(),
        static_cast<const T*>(res.data()), res.defined() ? res.ld() : 0,
        static_cast<T*>(sum.data()), sum.defined() ? sum.ld() : 0,
        static_cast<const T*>(gamma.data()), static_cast<const T*>(delta.data()),
        static_cast<float>(eps), static_cast<T*>(y.data()), y.ld(),
        static_cast<float*>(rstd.data()), rstd.ld());
  });
  // A row stays in registers: x (and the residual) read and y (and the sum)
  // written once; γ and δ, which every block reads, count once (the L2 cache
  // serves them).
  const std::int64_t residual = res.defined() ? bytes_of(res) + bytes_of(sum) : 0;
  WIOLA_CHECK_LAUNCH("wrmsnorm_fwd_kernel", bytes_of(x) + residual + bytes_of(gamma) +
                                               (delta.defined() ? bytes_of(delta) : 0) +
                                               bytes_of(y) + bytes_of(rstd));
}

}  // namespace

void wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta, double eps,
                  const Tensor& y, const Tensor& rstd, Stream s) {
  launch_fwd(x, Tensor{}, Tensor{}, gamma, delta, eps, y, rstd, s);
}

void add_wrmsnorm_fwd(const Tensor& x, const Tensor& r, const Tensor& gamma, const Tensor& delta,
                      double eps, const Tensor& sum, const Tensor& y, const Tensor& rstd,
                      Stream s) {
  launch_fwd(x, r, sum, gamma, delta, eps, y, rstd, s);
}

void wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta, const Tensor& rstd,
                  const Tensor& dy, const Tensor& dx, bool accumulate, const Tensor& dgamma,
                  const Tensor& ddelta, float* scratch, Stream s) {
  const std::int64_t n = x.rows(), d = x.cols();
  if (n == 0 || d == 0) return;
  const std::int64_t chunks = (n + kNormRowChunk - 1) / kNormRowChunk;
  auto stream = static_cast<cudaStream_t>(s);
  with_compute_type(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    WIOLA_LAUNCH(wrmsnorm_bwd_rows<T>, dim3(static_cast<unsigned>(chunks)),
                 dim3(norm_threads(d)), 0, stream)(
        n, static_cast<int>(d), static_cast<const T*>(x.data()), x.ld(),
        static_cast<const T*>(gamma.data()), static_cast<const T*>(delta.data()),
        static_cast<const float*>(rstd.data()), rstd.ld(), static_cast<const T*>(dy.data()),
        dy.ld(), static_cast<T*>(dx.data()), dx.ld(), accumulate, scratch);
  });
  const std::int64_t params = bytes_of(gamma) + (delta.defined() ? bytes_of(delta) : 0);
  const std::int64_t partials = chunks * 2 * d * 4;
  WIOLA_CHECK_LAUNCH("wrmsnorm_bwd_rows", bytes_of(x) + bytes_of(rstd) + bytes_of(dy) +
                                              (accumulate ? 2 : 1) * bytes_of(dx) + params +
                                              partials);
  WIOLA_LAUNCH(wrmsnorm_bwd_params, dim3(static_cast<unsigned>((2 * d + 31) / 32)),
               dim3(kSlices * 32), 0, stream)(chunks, static_cast<int>(d), scratch,
                                              static_cast<float*>(dgamma.data()),
                                              static_cast<float*>(ddelta.data()));
  // The partials read; dγ and dδ added into.
  WIOLA_CHECK_LAUNCH("wrmsnorm_bwd_params", partials + (ddelta.defined() ? 2 : 1) * 2 * d * 4);
}

}  // namespace wiola::cuda::kernels
