#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/reduce.hpp"

namespace wiola::cuda::kernels {

namespace {

// Block k sums elements [k·chunk, (k+1)·chunk) of the view, row by row.
template <class T>
__global__ void chunk_sums(std::int64_t rows, std::int64_t cols, const T* x, std::int64_t ld,
                           bool squares, double* partials) {
  __shared__ double scratch[32];
  const std::int64_t n = rows * cols;
  const std::int64_t begin = std::int64_t(blockIdx.x) * kSumChunk;
  const std::int64_t end = begin + kSumChunk < n ? begin + kSumChunk : n;
  double v = 0;
  for (std::int64_t e = begin + threadIdx.x; e < end; e += blockDim.x) {
    const Index2D i = split(e, cols);
    const double a = to_double(x[i.r * ld + i.c]);
    v += squares ? a * a : a;
  }
  v = block_sum(v, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

__global__ void add_partials(const double* partials, std::int64_t n, double* acc) {
  __shared__ double scratch[32];
  double v = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) v += partials[i];
  v = block_sum(v, scratch);
  if (threadIdx.x == 0) *acc += v;
}

}  // namespace

void sum(const Tensor& x, bool squares, double* acc, double* partials, Stream s) {
  const std::int64_t n = x.numel();
  if (n == 0) return;
  const std::int64_t chunks = (n + kSumChunk - 1) / kSumChunk;
  auto stream = static_cast<cudaStream_t>(s);
  switch (x.dtype()) {
    case DType::BF16:
      WIOLA_LAUNCH(chunk_sums<__nv_bfloat16>, dim3(unsigned(chunks)), dim3(kThreads), 0, stream)(
          x.rows(), x.cols(), static_cast<const __nv_bfloat16*>(x.data()), x.ld(), squares,
          partials);
      break;
    case DType::F64:
      WIOLA_LAUNCH(chunk_sums<double>, dim3(unsigned(chunks)), dim3(kThreads), 0, stream)(
          x.rows(), x.cols(), static_cast<const double*>(x.data()), x.ld(), squares, partials);
      break;
    default:
      WIOLA_LAUNCH(chunk_sums<float>, dim3(unsigned(chunks)), dim3(kThreads), 0, stream)(
          x.rows(), x.cols(), static_cast<const float*>(x.data()), x.ld(), squares, partials);
      break;
  }
  WIOLA_CHECK_LAUNCH("chunk_sums", bytes_of(x) + chunks * std::int64_t(sizeof(double)));
  WIOLA_LAUNCH(add_partials, dim3(1), dim3(kThreads), 0, stream)(partials, chunks, acc);
  WIOLA_CHECK_LAUNCH("add_partials", (chunks + 2) * std::int64_t(sizeof(double)));
}

}  // namespace wiola::cuda::kernels
