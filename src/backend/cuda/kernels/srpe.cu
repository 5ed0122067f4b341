// SRPE / rotary maps: one thread per pair (row, head, j); it reads both
// members before writing either, so the map works in place. Pair j of a head
// is (j, j + dh/2) (rotate-half) or (2j, 2j + 1) (interleaved).
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/srpe.hpp"

namespace wiola::cuda::kernels {

namespace {

template <class T>
__global__ void srpe_kernel(std::int64_t n, std::int64_t heads, int half, const T* x,
                            std::int64_t ldx, RotaryTables tab, float sign, T* y,
                            std::int64_t ldy) {
  const std::int64_t per_row = heads * half, total = n * per_row;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = e / per_row, rem = e % per_row;
    const int h = int(rem / half), j = int(rem % half);
    float c, sn;
    rotary_coefficients(tab, i, j, sign, c, sn);
    int ca, cb;
    rotary_columns(j, half, tab.interleaved, ca, cb);
    ca += h * 2 * half;
    cb += h * 2 * half;
    float ya, yb;
    rotate_pair(to_float(x[i * ldx + ca]), to_float(x[i * ldx + cb]), c, sn, ya, yb);
    y[i * ldy + ca] = from_float<T>(ya);
    y[i * ldy + cb] = from_float<T>(yb);
  }
}

}  // namespace

void srpe_apply(const Tensor& x, const Tensor& positions, const Tensor& cos_tab,
                const Tensor& sin_tab, int head_dim, bool interleaved, bool transpose,
                const Tensor& y, Stream s) {
  const std::int64_t half = head_dim / 2, heads = x.cols() / head_dim;
  const std::int64_t pairs = x.rows() * heads * half;
  if (pairs == 0) return;
  auto launch = [&](auto zero) {
    using T = decltype(zero);
    const RotaryTables tab{static_cast<const std::int32_t*>(positions.data()),
                           static_cast<const float*>(cos_tab.data()), cos_tab.ld(),
                           static_cast<const float*>(sin_tab.data()), sin_tab.ld(), cos_tab.rows(),
                           interleaved};
    WIOLA_LAUNCH(srpe_kernel<T>, dim3(blocks_for(pairs)), dim3(kThreads), 0,
                 static_cast<cudaStream_t>(s))(x.rows(), heads, int(half),
                                               static_cast<const T*>(x.data()), x.ld(), tab,
                                               transpose ? -1.0f : 1.0f,
                                               static_cast<T*>(y.data()), y.ld());
  };
  with_compute_type(x.dtype(), launch);
  // x read and y written; the positions, and the table rows they select.
  const std::int64_t table_rows = x.rows() < cos_tab.rows() ? x.rows() : cos_tab.rows();
  WIOLA_CHECK_LAUNCH("srpe_kernel",
                     bytes_of(x) + bytes_of(y) + x.rows() * 4 + table_rows * 2 * half * 4);
}

}  // namespace wiola::cuda::kernels
