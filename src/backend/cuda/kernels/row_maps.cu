// ATM row maps: row_cosine_next is one warp per row (three fp32 dot products
// reduced by shuffles); merge_rows_fwd one thread per element (rows and
// columns from a 2D grid);
// merge_rows_bwd the owner-computes scatter-add of scatter.cuh.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/row_maps.hpp"
#include "backend/cuda/kernels/scatter.cuh"

namespace wiola::cuda::kernels {

namespace {

constexpr int kRowsPerBlock = 8;  // row_cosine_next: one warp per row

__device__ __forceinline__ float warp_sum(float v) {
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

template <class T>
__global__ void cosine_next_kernel(std::int64_t n, int seq, std::int64_t d, const T* x,
                                   std::int64_t ldx, float* rho, std::int64_t ldr) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (i >= n) return;  // whole warps
  if (i % seq == seq - 1) {
    if (lane == 0) rho[i * ldr] = -2.0f;
    return;
  }
  const T* a = x + i * ldx;
  const T* b = a + ldx;
  float ab = 0.0f, aa = 0.0f, bb = 0.0f;
  for (std::int64_t c = lane; c < d; c += 32) {
    const float av = to_float(a[c]), bv = to_float(b[c]);
    ab += av * bv;
    aa += av * av;
    bb += bv * bv;
  }
  ab = warp_sum(ab);
  aa = warp_sum(aa);
  bb = warp_sum(bb);
  if (lane == 0) rho[i * ldr] = aa == 0.0f || bb == 0.0f ? 0.0f : ab / (sqrtf(aa) * sqrtf(bb));
}

template <class T>
__global__ void merge_fwd_kernel(std::int64_t rows, std::int64_t d, std::int64_t src_rows,
                                 const T* src, std::int64_t lds, const std::int32_t* ia,
                                 const std::int32_t* ib, T* dst, std::int64_t ldd) {
  for (std::int64_t r = blockIdx.y * std::int64_t(blockDim.y) + threadIdx.y; r < rows;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    const std::int64_t a = ia[r], b = ib[r];
    for (std::int64_t c = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; c < d;
         c += std::int64_t(gridDim.x) * blockDim.x) {
      float v;
      if (a < 0)
        v = 0.0f;
      else if (a >= src_rows || b >= src_rows)
        v = NAN;
      else if (b < 0)
        v = to_float(src[a * lds + c]);
      else
        v = (to_float(src[a * lds + c]) + to_float(src[b * lds + c])) * 0.5f;
      dst[r * ldd + c] = from_float<T>(v);
    }
  }
}

// Item 2r reads slot a of destination row r, item 2r+1 slot b; a row with
// no first index adds nothing, a row with two indices adds half to each.
struct MergeRows {
  const std::int32_t *ia, *ib;
  __device__ int key(std::int64_t item) const {
    const std::int64_t r = item / 2;
    const int a = ia[r];
    if (a < 0) return -1;
    return item % 2 == 0 ? a : ib[r];
  }
  __device__ std::int64_t source(std::int64_t item) const { return item / 2; }
  __device__ float weight(std::int64_t item) const { return ib[item / 2] < 0 ? 1.0f : 0.5f; }
};

// One warp per source row t of sequence b (rows o = b·seq onwards): its
// group is the last of the sequence's first T' rows whose first member is at
// most t (they ascend, and the first is o); its unmerged copy, if t is the
// first member of a pair, the row of the rest whose member is t.
template <class T>
__global__ void causal_merge_bwd_kernel(int n, int seq, std::int64_t cols, const T* ddst,
                                        std::int64_t ldd, const std::int32_t* ia,
                                        const std::int32_t* ib, const std::int32_t* groups,
                                        T* dsrc, std::int64_t lds) {
  const int warps = static_cast<int>(blockDim.x / 32);
  const int t = static_cast<int>(blockIdx.x) * warps + static_cast<int>(threadIdx.x / 32);
  if (t >= n) return;  // the whole warp
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int o = t / seq * seq, end_groups = o + groups[t / seq];
  int lo = o, hi = end_groups;  // ia[lo] <= t
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (ia[mid] <= t)
      lo = mid;
    else
      hi = mid;
  }
  const int g = lo;
  const float w = ib[g] >= 0 ? 0.5f : 1.0f;
  lo = end_groups;
  hi = o + seq;
  while (lo < hi) {  // the first row of the rest whose member is >= t
    const int mid = (lo + hi) / 2;
    if (ia[mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  const int u = lo < o + seq && ia[lo] == t ? lo : -1;
  for (std::int64_t c = lane; c < cols; c += 32) {
    float v = w * to_float(ddst[std::int64_t(g) * ldd + c]);
    if (u >= 0) v += to_float(ddst[std::int64_t(u) * ldd + c]);
    dsrc[std::int64_t(t) * lds + c] = from_float<T>(v);
  }
}

}  // namespace

void row_cosine_next(const Tensor& x, int batch, int seq, const Tensor& rho, Stream s) {
  const std::int64_t n = static_cast<std::int64_t>(batch) * seq;
  if (n == 0) return;
  with_compute_type(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    WIOLA_LAUNCH(cosine_next_kernel<T>,
                 dim3(static_cast<unsigned>((n + kRowsPerBlock - 1) / kRowsPerBlock)),
                 dim3(kRowsPerBlock * 32), 0, static_cast<cudaStream_t>(s))(
        n, seq, x.cols(), static_cast<const T*>(x.data()), x.ld(),
        static_cast<float*>(rho.data()), rho.ld());
  });
  // Each row read by its own warp and its predecessor's (the L2 cache: once).
  WIOLA_CHECK_LAUNCH("cosine_next_kernel", bytes_of(x) + bytes_of(rho));
}

void merge_rows_fwd(const Tensor& src, const Tensor& idx_a, const Tensor& idx_b,
                    const Tensor& dst, Stream s) {
  if (dst.numel() == 0) return;
  with_compute_type(src.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const Grid2D g = grid_2d(dst.rows(), dst.cols());
    WIOLA_LAUNCH(merge_fwd_kernel<T>, g.grid, g.block, 0, static_cast<cudaStream_t>(s))(
        dst.rows(), dst.cols(), src.rows(), static_cast<const T*>(src.data()), src.ld(),
        static_cast<const std::int32_t*>(idx_a.data()),
        static_cast<const std::int32_t*>(idx_b.data()), static_cast<T*>(dst.data()), dst.ld());
  });
  // The indices and at most every source row read, every row written.
  WIOLA_CHECK_LAUNCH("merge_fwd_kernel", bytes_of(idx_a) + bytes_of(idx_b) + bytes_of(src) +
                                             bytes_of(dst));
}

void merge_rows_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                    const Tensor& dsrc, Stream s) {
  const ScatterPlan p = plan_scatter(dsrc.rows(), dsrc.cols());
  if (p.warps == 0 || ddst.rows() == 0) return;
  const MergeRows map{static_cast<const std::int32_t*>(idx_a.data()),
                      static_cast<const std::int32_t*>(idx_b.data())};
  with_compute_type(dsrc.dtype(), [&](auto zero) {
    using T = decltype(zero);
    WIOLA_LAUNCH((owner_scatter_add<T, T, MergeRows>), dim3(p.blocks), dim3(kScatterWarps * 32),
                 0, static_cast<cudaStream_t>(s))(
        2 * ddst.rows(), dsrc.cols(), dsrc.rows(), p.partitions, p.warps, map,
        static_cast<const T*>(ddst.data()), ddst.ld(), static_cast<T*>(dsrc.data()),
        dsrc.ld());
  });
  // Items are (row, slot) pairs: both slots read their row of ddst (from
  // the L2 cache the second time) and its two indices.
  WIOLA_CHECK_LAUNCH("owner_scatter_add (merge_rows)",
                     scatter_bytes(ddst.rows(), dsrc.rows(), 2 * dsrc.cols(),
                                   dtype_size(ddst.dtype()), dtype_size(dsrc.dtype()), 8));
}

void causal_merge_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                      const Tensor& groups, int batch, int seq, const Tensor& dsrc, Stream s) {
  const std::int64_t n = std::int64_t(batch) * seq;
  if (n == 0 || dsrc.cols() == 0) return;
  constexpr int kWarps = 8;
  with_compute_type(dsrc.dtype(), [&](auto zero) {
    using T = decltype(zero);
    WIOLA_LAUNCH(causal_merge_bwd_kernel<T>,
                 dim3(static_cast<unsigned>((n + kWarps - 1) / kWarps)), dim3(kWarps * 32), 0,
                 static_cast<cudaStream_t>(s))(
        static_cast<int>(n), seq, dsrc.cols(), static_cast<const T*>(ddst.data()), ddst.ld(),
        static_cast<const std::int32_t*>(idx_a.data()),
        static_cast<const std::int32_t*>(idx_b.data()),
        static_cast<const std::int32_t*>(groups.data()), static_cast<T*>(dsrc.data()),
        dsrc.ld());
  });
  // Every row of ddst read (a group's by both its members: the L2 cache),
  // the maps and T' of every sequence, every row of dsrc written.
  WIOLA_CHECK_LAUNCH("causal_merge_bwd_kernel", bytes_of(ddst) + bytes_of(idx_a) +
                                                    bytes_of(idx_b) + bytes_of(groups) +
                                                    bytes_of(dsrc));
}

}  // namespace wiola::cuda::kernels
