// GCLA attention backward, the context rows and dphi, deterministically.
//
// A context row r can be read by many queries (causal summaries: usually one
// query per row; sequence summaries: every query of a sequence reads its
// sequence's row). Its gradient, for every summary c and group g,
//   dctx_k[c][r, g] = Σ_{i reads r} Σ_{h ≡ g} coef_k[i,h,c] q_{i,h}
//   dctx_v[c][r, g] = Σ_{i reads r} Σ_{h ≡ g} coef_v[i,h,c] dO_{i,h}
// is gathered per row from the list of its readers in ascending order,
// never scattered with floating-point atomics:
//   ctx_count   one thread per query row: its context row (-1 for padding) and
//               a count per row (integer atomics: exact in any order);
//   ctx_scan    one block: exclusive prefix sums of the counts (bucket starts)
//               and of the rows' chunk counts (below);
//   ctx_fill    one thread per reader: its slot in the bucket, in arrival order;
//   ctx_rank    one thread per reader: its rank among its bucket's readers
//               (how many have a smaller row index), so readers[start + rank]
//               is the bucket in ascending order, whatever the arrival order;
//   ctx_partial one block per chunk of kChunk readers of a row with more than
//               kChunk readers: partial sums, threads over the (g, d) columns;
//   ctx_final   one block per context row: a row with <= kChunk readers sums
//               them directly, a longer one adds its chunks' partial sums in
//               order; writes every row (zero when nobody reads it). One
//               more block, which needs nothing the others write, makes dphi:
//               dphi += β(1 − β) Σ_rows dbeta_row, summed in double in a
//               fixed tree (its own launch before, one fewer now).
#include "backend/cuda/kernels/attention.hpp"
#include "backend/cuda/kernels/attention_common.cuh"

namespace wiola::cuda::kernels {

namespace {

using attn::clampi;
using attn::kFull;
using attn::kMaxCtx;

constexpr int kChunk = 64;         // readers per partial sum
constexpr int kColThreads = 256;   // threads of the gather kernels
constexpr int kScanThreads = 256;

struct Buckets {
  int rows;                 // context rows (the most any context tensor has)
  const int* key;           // [N]: context row of query row i, -1 for padding
  int* count;               // [rows]
  int* start;               // [rows + 1]
  int* chunk_start;         // [rows + 1]: first chunk of each row (rows with <= kChunk readers: none)
  int* cursor;              // [rows]
  int* unsorted;            // [N]
  int* readers;             // [N]
};

template <class T>
struct Gather {
  int heads, kv_heads, head_dim, n_ctx, rows;
  const T* q;
  std::int64_t ldq;
  const T* d_o;
  std::int64_t lddo;
  const float* coef_k;  // [N, H, n_ctx]
  const float* coef_v;
  const int* start;
  const int* chunk_start;
  const int* readers;
  float* partials;  // [chunks, n_ctx, 2, Hkv*dh]
  T* dctx_k[kMaxCtx];
  std::int64_t ld_dk[kMaxCtx];
  T* dctx_v[kMaxCtx];
  std::int64_t ld_dv[kMaxCtx];
  int ctx_rows[kMaxCtx];
  // dphi, made by the block after the last context row's.
  const T* phi;
  const float* dbeta_row;
  std::int64_t n;
  float* dphi;
};

__global__ void ctx_count(std::int64_t n, int seq, const std::int32_t* n_queries,
                          const std::int32_t* ctx_row, int readable_rows, int* key, int* count) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int b = int(i / seq), t = int(i % seq);
  const bool valid = t < clampi(n_queries[b], 0, seq);
  const int r = valid ? clampi(ctx_row[i], 0, readable_rows - 1) : -1;
  key[i] = r;
  if (r >= 0) atomicAdd(&count[r], 1);
}

__global__ void __launch_bounds__(kScanThreads) ctx_scan(Buckets bk) {
  __shared__ int warp_total[2][kScanThreads / 32];
  __shared__ int carry[2];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  if (tid == 0) carry[0] = carry[1] = 0;
  __syncthreads();
  for (int base = 0; base < bk.rows; base += blockDim.x) {
    const int idx = base + tid;
    const int c = idx < bk.rows ? bk.count[idx] : 0;
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

__global__ void ctx_fill(std::int64_t n, Buckets bk) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int r = bk.key[i];
  if (r < 0) return;
  const int slot = atomicAdd(&bk.cursor[r], 1);
  bk.unsorted[bk.start[r] + slot] = int(i);
}

__global__ void ctx_rank(std::int64_t n, Buckets bk) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int r = bk.key[i];
  if (r < 0) return;
  const int s0 = bk.start[r], s1 = bk.start[r + 1];
  int rank = 0;
  for (int m = s0; m < s1; ++m) rank += bk.unsorted[m] < i ? 1 : 0;
  bk.readers[s0 + rank] = int(i);
}

// Sums readers [begin, end) of the column (g, d) = (col / dh, col % dh) into
// ak[c], av[c], reader by reader, head by head.
template <class T>
__device__ void gather(const Gather<T>& a, int begin, int end, int col, float* ak, float* av) {
  const int dh = a.head_dim, g = col / dh, d = col % dh;
  for (int m = begin; m < end; ++m) {
    const std::int64_t i = a.readers[m];
    for (int h = g; h < a.heads; h += a.kv_heads) {
      const float qv = to_float(a.q[i * a.ldq + h * dh + d]);
      const float gv = to_float(a.d_o[i * a.lddo + h * dh + d]);
      const float* ck = a.coef_k + (i * a.heads + h) * a.n_ctx;
      const float* cv = a.coef_v + (i * a.heads + h) * a.n_ctx;
      for (int c = 0; c < kMaxCtx; ++c) {
        if (c >= a.n_ctx) break;
        ak[c] += ck[c] * qv;
        av[c] += cv[c] * gv;
      }
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kColThreads) ctx_partial(Gather<T> a) {
  const int chunk = blockIdx.x;
  if (chunk >= a.chunk_start[a.rows]) return;
  int lo = 0, hi = a.rows;  // the row owning the chunk: chunk_start[lo] <= chunk < chunk_start[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (a.chunk_start[mid] <= chunk)
      lo = mid;
    else
      hi = mid;
  }
  const int begin = a.start[lo] + (chunk - a.chunk_start[lo]) * kChunk;
  const int end = begin + kChunk < a.start[lo + 1] ? begin + kChunk : a.start[lo + 1];
  const int width = a.kv_heads * a.head_dim;
  for (int col = threadIdx.x; col < width; col += blockDim.x) {
    float ak[kMaxCtx] = {}, av[kMaxCtx] = {};
    gather(a, begin, end, col, ak, av);
    for (int c = 0; c < kMaxCtx; ++c) {
      if (c >= a.n_ctx) break;
      float* p = a.partials + ((std::int64_t(chunk) * a.n_ctx + c) * 2) * width;
      p[col] = ak[c];
      p[width + col] = av[c];
    }
  }
}

template <class T>
__device__ void add_dphi(const Gather<T>& a, double* scratch) {
  double v = 0.0;
  for (std::int64_t i = threadIdx.x; i < a.n; i += blockDim.x) v += a.dbeta_row[i];
  v = block_sum(v, scratch);
  if (threadIdx.x == 0) {
    const double x = to_double(a.phi[0]);
    const double beta = x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    a.dphi[0] = static_cast<float>(static_cast<double>(a.dphi[0]) + v * beta * (1.0 - beta));
  }
}

template <class T>
__global__ void __launch_bounds__(kColThreads) ctx_final(Gather<T> a) {
  __shared__ double scratch[32];
  const int r = blockIdx.x;
  if (r == a.rows) {  // the extra block (block-uniform: its barriers are safe)
    add_dphi(a, scratch);
    return;
  }
  const int s0 = a.start[r], s1 = a.start[r + 1];
  const bool chunked = s1 - s0 > kChunk;
  const int width = a.kv_heads * a.head_dim;
  for (int col = threadIdx.x; col < width; col += blockDim.x) {
    float ak[kMaxCtx] = {}, av[kMaxCtx] = {};
    if (!chunked) {
      gather(a, s0, s1, col, ak, av);
    } else {
      for (int chunk = a.chunk_start[r]; chunk < a.chunk_start[r + 1]; ++chunk)
        for (int c = 0; c < kMaxCtx; ++c) {
          if (c >= a.n_ctx) break;
          const float* p = a.partials + ((std::int64_t(chunk) * a.n_ctx + c) * 2) * width;
          ak[c] += p[col];
          av[c] += p[width + col];
        }
    }
    for (int c = 0; c < kMaxCtx; ++c) {
      if (c >= a.n_ctx) break;
      if (r >= a.ctx_rows[c]) continue;
      a.dctx_k[c][r * a.ld_dk[c] + col] = from_float<T>(ak[c]);
      a.dctx_v[c][r * a.ld_dv[c] + col] = from_float<T>(av[c]);
    }
  }
}

unsigned blocks_of(std::int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace

void attention_context_grads(const AttentionDims& dims, const Tensor& q, const Tensor& d_o,
                             std::span<const Tensor> ctx_k, const Tensor& phi,
                             const AttentionIndex& index, const float* coef_k,
                             const float* coef_v, const float* dbeta_row,
                             std::span<const Tensor> dctx_k, std::span<const Tensor> dctx_v,
                             const Tensor& dphi, const Allocate& alloc, Stream s) {
  const auto stream = static_cast<cudaStream_t>(s);
  const std::int64_t n = std::int64_t(dims.batch) * dims.seq;
  const int n_ctx = static_cast<int>(ctx_k.size());
  std::int64_t rows = 0, readable = INT32_MAX;
  for (const Tensor& c : ctx_k) {
    rows = std::max(rows, c.rows());
    readable = std::min(readable, c.rows());
  }

  // count and cursor are counted into (atomics): one block, one memset.
  const Tensor counters = alloc(DType::I32, 2 * (rows + 1), 1);
  memset_zero(counters.data(), counters.bytes(), s);
  const Tensor count = counters.rows_slice(0, rows + 1),
               cursor = counters.rows_slice(rows + 1, 2 * (rows + 1));
  const Tensor key = alloc(DType::I32, n, 1), start = alloc(DType::I32, rows + 1, 1),
               chunk_start = alloc(DType::I32, rows + 1, 1), unsorted = alloc(DType::I32, n, 1),
               readers = alloc(DType::I32, n, 1);
  const Buckets bk{static_cast<int>(rows),
                   static_cast<const int*>(key.data()),
                   static_cast<int*>(count.data()),
                   static_cast<int*>(start.data()),
                   static_cast<int*>(chunk_start.data()),
                   static_cast<int*>(cursor.data()),
                   static_cast<int*>(unsorted.data()),
                   static_cast<int*>(readers.data())};
  constexpr int kRowThreads = 256;
  WIOLA_LAUNCH(ctx_count, dim3(blocks_of(n, kRowThreads)), dim3(kRowThreads), 0, stream)(
      n, dims.seq, static_cast<const std::int32_t*>(index.n_queries.data()),
      static_cast<const std::int32_t*>(index.ctx_row.data()), static_cast<int>(readable),
      static_cast<int*>(key.data()), bk.count);
  // The index of every row read, its key written and counted (read and written).
  WIOLA_CHECK_LAUNCH("ctx_count", n * 16 + std::int64_t(dims.batch) * 4);
  WIOLA_LAUNCH(ctx_scan, dim3(1), dim3(kScanThreads), 0, stream)(bk);
  WIOLA_CHECK_LAUNCH("ctx_scan", (rows + 1) * 12);  // counts read, two offsets written
  WIOLA_LAUNCH(ctx_fill, dim3(blocks_of(n, kRowThreads)), dim3(kRowThreads), 0, stream)(n, bk);
  // key, start and the cursor (read and written) per row; its slot written.
  WIOLA_CHECK_LAUNCH("ctx_fill", n * 20);
  WIOLA_LAUNCH(ctx_rank, dim3(blocks_of(n, kRowThreads)), dim3(kRowThreads), 0, stream)(n, bk);
  // Each row scans its bucket (from the L2 cache when rows share one) and
  // writes its reader slot.
  WIOLA_CHECK_LAUNCH("ctx_rank", n * 20);

  // At most Σ ceil(count / kChunk) over rows with more than kChunk readers
  // < 2n / kChunk chunks.
  const std::int64_t max_chunks = 2 * n / kChunk + 1;
  const std::int64_t width = std::int64_t(dims.kv_heads) * dims.head_dim;
  const Tensor partials = alloc(DType::F32, max_chunks, 2 * n_ctx * width);

  auto run = [&](auto zero) {
    using T = decltype(zero);
    Gather<T> a{};
    a.heads = dims.heads;
    a.kv_heads = dims.kv_heads;
    a.head_dim = dims.head_dim;
    a.n_ctx = n_ctx;
    a.rows = static_cast<int>(rows);
    a.q = static_cast<const T*>(q.data());
    a.ldq = q.ld();
    a.d_o = static_cast<const T*>(d_o.data());
    a.lddo = d_o.ld();
    a.coef_k = coef_k;
    a.coef_v = coef_v;
    a.start = bk.start;
    a.chunk_start = bk.chunk_start;
    a.readers = bk.readers;
    a.partials = static_cast<float*>(partials.data());
    for (int c = 0; c < n_ctx; ++c) {
      a.dctx_k[c] = static_cast<T*>(dctx_k[c].data());
      a.ld_dk[c] = dctx_k[c].ld();
      a.dctx_v[c] = static_cast<T*>(dctx_v[c].data());
      a.ld_dv[c] = dctx_v[c].ld();
      a.ctx_rows[c] = static_cast<int>(dctx_k[c].rows());
    }
    a.phi = static_cast<const T*>(phi.data());
    a.dbeta_row = dbeta_row;
    a.n = n;
    a.dphi = static_cast<float*>(dphi.data());
    WIOLA_LAUNCH(ctx_partial<T>, dim3(unsigned(max_chunks)), dim3(kColThreads), 0, stream)(a);
    // At most every chunk's partial sums written (the gathers: ctx_final).
    WIOLA_CHECK_LAUNCH("ctx_partial", bytes_of(partials));
    WIOLA_LAUNCH(ctx_final<T>, dim3(unsigned(rows + 1)), dim3(kColThreads), 0, stream)(a);
    // Every reader's q, dO and coefficients gathered once (here or in
    // ctx_partial), the partials read back, every context row's gradients
    // written; dβ of every row read and dphi read and written.
    const std::int64_t coefs = 2 * n * dims.heads * n_ctx * 4,
                       grads = 2 * std::int64_t(n_ctx) * rows * width * sizeof(T);
    WIOLA_CHECK_LAUNCH("ctx_final", bytes_of(q) + bytes_of(d_o) + coefs + n * 4 +
                                        bytes_of(partials) + grads + n * 4 + 8);
  };
  with_compute_type(q.dtype(), run);
}

}  // namespace wiola::cuda::kernels
