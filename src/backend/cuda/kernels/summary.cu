// Summaries: a block owns 32 columns of one sequence; its kSlices warps split
// the sequence into kSlices ranges of rows (lane = column, so every row read
// is coalesced). Scans take two passes over the rows: each slice sums its
// range, the slices' totals are combined in slice order through shared
// memory, and each slice then runs down (causal forward) or up (causal
// backward) its range from that offset. Fixed order: deterministic.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/summary.hpp"

namespace wiola::cuda::kernels {

namespace {

constexpr int kSlices = 16;  // warps per block; row ranges per sequence

struct Slice {
  std::int64_t b, c;    // sequence, column
  int lane, slice;
  std::int64_t t0, t1;  // rows [t0, t1) of the sequence
};

__device__ Slice my_slice(std::int64_t tiles, int seq) {
  Slice s;
  s.lane = threadIdx.x % 32;
  s.slice = threadIdx.x / 32;
  s.b = blockIdx.x / tiles;
  s.c = (blockIdx.x % tiles) * 32 + s.lane;
  const std::int64_t len = (seq + kSlices - 1) / kSlices;
  s.t0 = s.slice * len < seq ? s.slice * len : seq;
  s.t1 = s.t0 + len < seq ? s.t0 + len : seq;
  return s;
}

// s[b,t] = (Σ_{u<=t} x[b,u]) / (t+1)
template <class T>
__global__ void causal_fwd(std::int64_t tiles, int seq, std::int64_t d, const T* x,
                           std::int64_t ldx, T* s, std::int64_t lds) {
  __shared__ float part[kSlices][32];
  const Slice sl = my_slice(tiles, seq);
  const bool col = sl.c < d;
  const std::int64_t row0 = sl.b * seq;
  float sum = 0.0f;
  if (col)
    for (std::int64_t t = sl.t0; t < sl.t1; ++t) sum += to_float(x[(row0 + t) * ldx + sl.c]);
  part[sl.slice][sl.lane] = sum;
  __syncthreads();
  if (!col) return;
  float acc = 0.0f;
  for (int q = 0; q < sl.slice; ++q) acc += part[q][sl.lane];
  for (std::int64_t t = sl.t0; t < sl.t1; ++t) {
    acc += to_float(x[(row0 + t) * ldx + sl.c]);
    s[(row0 + t) * lds + sl.c] = from_float<T>(acc / static_cast<float>(t + 1));
  }
}

// dx[b,u] += Σ_{t>=u} ds[b,t] / (t+1)
template <class T>
__global__ void causal_bwd(std::int64_t tiles, int seq, std::int64_t d, const T* ds,
                           std::int64_t ldds, T* dx, std::int64_t lddx) {
  __shared__ float part[kSlices][32];
  const Slice sl = my_slice(tiles, seq);
  const bool col = sl.c < d;
  const std::int64_t row0 = sl.b * seq;
  float sum = 0.0f;
  if (col)
    for (std::int64_t t = sl.t1 - 1; t >= sl.t0; --t)
      sum += to_float(ds[(row0 + t) * ldds + sl.c]) / static_cast<float>(t + 1);
  part[sl.slice][sl.lane] = sum;
  __syncthreads();
  if (!col) return;
  float acc = 0.0f;
  for (int q = kSlices - 1; q > sl.slice; --q) acc += part[q][sl.lane];
  for (std::int64_t t = sl.t1 - 1; t >= sl.t0; --t) {
    acc += to_float(ds[(row0 + t) * ldds + sl.c]) / static_cast<float>(t + 1);
    T* out = dx + (row0 + t) * lddx + sl.c;
    *out = from_float<T>(to_float(*out) + acc);
  }
}

// s[b] = (Σ_u x[b,u]) / seq
template <class T>
__global__ void sequence_fwd(std::int64_t tiles, int seq, std::int64_t d, const T* x,
                             std::int64_t ldx, T* s, std::int64_t lds) {
  __shared__ float part[kSlices][32];
  const Slice sl = my_slice(tiles, seq);
  const bool col = sl.c < d;
  const std::int64_t row0 = sl.b * seq;
  float sum = 0.0f;
  if (col)
    for (std::int64_t t = sl.t0; t < sl.t1; ++t) sum += to_float(x[(row0 + t) * ldx + sl.c]);
  part[sl.slice][sl.lane] = sum;
  __syncthreads();
  if (!col || sl.slice != 0) return;
  float total = 0.0f;
  for (int q = 0; q < kSlices; ++q) total += part[q][sl.lane];
  s[sl.b * lds + sl.c] = from_float<T>(total / static_cast<float>(seq));
}

// dx[b,u] += ds[b] / seq, one thread per element (rows and columns from a
// 2D grid: one division per row, none per element).
template <class T>
__global__ void sequence_bwd(std::int64_t rows, int seq, std::int64_t d, const T* ds,
                             std::int64_t ldds, T* dx, std::int64_t lddx) {
  for (std::int64_t r = blockIdx.y * std::int64_t(blockDim.y) + threadIdx.y; r < rows;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    const T* g_row = ds + (r / seq) * ldds;
    T* out_row = dx + r * lddx;
    for (std::int64_t c = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; c < d;
         c += std::int64_t(gridDim.x) * blockDim.x) {
      const float g = to_float(g_row[c]) / static_cast<float>(seq);
      out_row[c] = from_float<T>(to_float(out_row[c]) + g);
    }
  }
}

}  // namespace

void summary_fwd(SummaryMode mode, const Tensor& x, int batch, int seq, const Tensor& s,
                 Stream st) {
  const std::int64_t d = x.cols(), tiles = (d + 31) / 32;
  if (batch == 0 || d == 0) return;
  const dim3 grid(static_cast<unsigned>(tiles * batch)), block(kSlices * 32);
  auto stream = static_cast<cudaStream_t>(st);
  with_compute_type(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* xp = static_cast<const T*>(x.data());
    T* sp = static_cast<T*>(s.data());
    if (mode == SummaryMode::Causal)
      WIOLA_LAUNCH(causal_fwd<T>, grid, block, 0, stream)(tiles, seq, d, xp, x.ld(), sp, s.ld());
    else
      WIOLA_LAUNCH(sequence_fwd<T>, grid, block, 0, stream)(tiles, seq, d, xp, x.ld(), sp,
                                                            s.ld());
  });
  // x read (the causal scan's second pass over a slice: from the cache), s written.
  WIOLA_CHECK_LAUNCH("summary_fwd", bytes_of(x) + bytes_of(s));
}

void summary_bwd(SummaryMode mode, const Tensor& ds, int batch, int seq, const Tensor& dx,
                 Stream st) {
  const std::int64_t d = dx.cols(), tiles = (d + 31) / 32;
  if (batch == 0 || d == 0) return;
  auto stream = static_cast<cudaStream_t>(st);
  with_compute_type(dx.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* dsp = static_cast<const T*>(ds.data());
    T* dxp = static_cast<T*>(dx.data());
    if (mode == SummaryMode::Causal) {
      WIOLA_LAUNCH(causal_bwd<T>, dim3(static_cast<unsigned>(tiles * batch)), dim3(kSlices * 32),
                   0, stream)(tiles, seq, d, dsp, ds.ld(), dxp, dx.ld());
    } else {
      const Grid2D g = grid_2d(dx.rows(), d);
      WIOLA_LAUNCH(sequence_bwd<T>, g.grid, g.block, 0, stream)(dx.rows(), seq, d, dsp, ds.ld(),
                                                                dxp, dx.ld());
    }
  });
  // ds read; dx added into (read and written).
  WIOLA_CHECK_LAUNCH("summary_bwd", bytes_of(ds) + 2 * bytes_of(dx));
}

}  // namespace wiola::cuda::kernels
