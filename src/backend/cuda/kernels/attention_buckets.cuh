#pragma once
// The readers of each context row, bucketed in ascending order, for the
// deterministic gather of the context rows' gradients (attention_ctx.cu).
// They depend on the plan only, so they are built inside the attention
// backward's earlier launches, as extra blocks, instead of four launches of
// their own:
//   count  extra blocks of attention_bwd_prep, one thread per query row: its
//          context row (-1 for padding) into key, and a count per row
//          (integer atomics: exact in any order). The last of these blocks
//          to finish (a done counter, after a memory fence: the threadfence
//          pattern of CUDA's reduction sample) scans the counts: the bucket
//          starts, and the chunk starts of rows with more than kChunk readers;
//   fill   extra blocks of attention_bwd_dkdv (the launch after the scan), one
//          thread per reader: its slot in the bucket, in arrival order;
//   rank   extra blocks of attention_bwd_dq (the launch after the fill), one
//          thread per reader: its rank among its bucket's readers (how many
//          have a smaller row index), so readers[start + rank] is the bucket
//          in ascending order, whatever the arrival order.
// The extra blocks of a 3D tile grid are the columns past the tiles, counted
// over every (y, z): extra_blocks() says how many columns a kernel adds.
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cuda/kernels/attention.hpp"
#include "backend/cuda/kernels/attention_common.cuh"

namespace wiola::cuda::kernels::attn {

constexpr int kChunk = 64;  // readers per partial sum of a long bucket

struct Buckets {
  int rows = 0;  // context rows (the most any context tensor has); 0: no buckets
  std::int64_t n = 0;
  int seq = 0, readable = 0;  // rows every context tensor has
  const std::int32_t* n_queries = nullptr;
  const std::int32_t* ctx_row = nullptr;
  int* key = nullptr;          // [n]: context row of query row i, -1 for padding
  int* count = nullptr;        // [rows + 1]: zeroed
  int* cursor = nullptr;       // [rows + 1]: zeroed
  int* done = nullptr;         // [1]: count blocks finished; zeroed
  int* chunks_done = nullptr;  // [rows + 1]: the gather's chunk blocks finished per row; zeroed
  int* start = nullptr;        // [rows + 1]
  int* chunk_start = nullptr;  // [rows + 1]: first chunk of each row (rows with <= kChunk readers: none)
  int* unsorted = nullptr;     // [n]
  int* readers = nullptr;      // [n]
};

// Blocks of kTileThreads threads with one thread per query row.
inline std::int64_t bucket_blocks(std::int64_t n) {
  return (n + kTileThreads - 1) / kTileThreads;
}
// Columns a tile grid of `planes` (y · z) blocks per column adds for them.
inline unsigned extra_columns(std::int64_t n, std::int64_t planes) {
  return static_cast<unsigned>((bucket_blocks(n) + planes - 1) / planes);
}
// The index of an extra block among them, for a grid whose first `tiles`
// columns are tiles.
__device__ __forceinline__ int extra_block(int tiles) {
  return (int(blockIdx.z) * int(gridDim.y) + int(blockIdx.y)) * (int(gridDim.x) - tiles) +
         (int(blockIdx.x) - tiles);
}

// One block scans the counts: exclusive prefix sums (bucket starts) and the
// long rows' chunk counts. Counts are read through volatile: other blocks'
// atomics wrote them.
__device__ inline void scan_counts(const Buckets& bk) {
  __shared__ int warp_total[2][32];
  __shared__ int carry[2];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const volatile int* count = bk.count;
  if (tid == 0) carry[0] = carry[1] = 0;
  __syncthreads();
  for (int base = 0; base < bk.rows; base += blockDim.x) {
    const int idx = base + tid;
    const int c = idx < bk.rows ? count[idx] : 0;
    const int ch = c > kChunk ? (c + kChunk - 1) / kChunk : 0;
    int x = c, y = ch;  // inclusive scans inside the warp
    for (int off = 1; off < 32; off *= 2) {
      const int xs = __shfl_up_sync(kFull, x, off), ys = __shfl_up_sync(kFull, y, off);
      if (lane >= off) {
        x += xs;
        y += ys;
      }
    }
    if (lane == 31) {
      warp_total[0][warp] = x;
      warp_total[1][warp] = y;
    }
    __syncthreads();
    int bx = carry[0], by = carry[1];
    for (int w = 0; w < warp; ++w) {
      bx += warp_total[0][w];
      by += warp_total[1][w];
    }
    if (idx < bk.rows) {
      bk.start[idx] = bx + x - c;
      bk.chunk_start[idx] = by + y - ch;
    }
    __syncthreads();  // carry and the warp totals are read
    if (tid == int(blockDim.x) - 1) {
      carry[0] = bx + x;
      carry[1] = by + y;
    }
    __syncthreads();
  }
  if (tid == 0) {
    bk.start[bk.rows] = carry[0];
    bk.chunk_start[bk.rows] = carry[1];
  }
}

// Count block `block` of `blocks`; the last to finish scans.
__device__ inline void bucket_count(const Buckets& bk, int block, int blocks) {
  const std::int64_t i = std::int64_t(block) * blockDim.x + threadIdx.x;
  if (i < bk.n) {
    const int b = int(i / bk.seq), t = int(i % bk.seq);
    const bool valid = t < clampi(bk.n_queries[b], 0, bk.seq);
    const int r = valid ? clampi(bk.ctx_row[i], 0, bk.readable - 1) : -1;
    bk.key[i] = r;
    if (r >= 0) atomicAdd(&bk.count[r], 1);
  }
  __shared__ int last;
  __threadfence();  // this block's counts are visible before it says it is done
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(bk.done, 1) == blocks - 1 ? 1 : 0;
  __syncthreads();
  if (last) scan_counts(bk);
}

__device__ inline void bucket_fill(const Buckets& bk, int block) {
  const std::int64_t i = std::int64_t(block) * blockDim.x + threadIdx.x;
  if (i >= bk.n) return;
  const int r = bk.key[i];
  if (r < 0) return;
  const int slot = atomicAdd(&bk.cursor[r], 1);
  bk.unsorted[bk.start[r] + slot] = int(i);
}

__device__ inline void bucket_rank(const Buckets& bk, int block) {
  const std::int64_t i = std::int64_t(block) * blockDim.x + threadIdx.x;
  if (i >= bk.n) return;
  const int r = bk.key[i];
  if (r < 0) return;
  const int s0 = bk.start[r], s1 = bk.start[r + 1];
  int rank = 0;
  for (int m = s0; m < s1; ++m) rank += bk.unsorted[m] < i ? 1 : 0;
  bk.readers[s0 + rank] = int(i);
}

// Host: the buckets' arrays for a backward with context (ctx_k not empty),
// the counters zeroed (one memset). Their tensors go to `memory`, which the
// caller keeps until the gather is queued (the allocator then reuses them in
// stream order).
Buckets make_buckets(const AttentionDims& dims, std::span<const Tensor> ctx_k,
                     const AttentionIndex& index, const Allocate& alloc,
                     std::vector<Tensor>& memory, Stream s);

// Host: dctx_k[c], dctx_v[c] (written) from the per-(query row, head,
// summary) coefficients coef_k = ∂L/∂score / √dh and coef_v = β·w (fp32
// [B*T*H*n_ctx]) over the buckets, and dphi += β(1 − β) Σ dbeta_row (fp32
// [B*T]).
void attention_context_grads(const AttentionDims& dims, const Tensor& q, const Tensor& d_o,
                             std::span<const Tensor> ctx_k, const Tensor& phi,
                             const Buckets& bk, const float* coef_k, const float* coef_v,
                             const float* dbeta_row, std::span<const Tensor> dctx_k,
                             std::span<const Tensor> dctx_v, const Tensor& dphi,
                             const Allocate& alloc, Stream s);

}  // namespace wiola::cuda::kernels::attn
