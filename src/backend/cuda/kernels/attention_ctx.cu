// GCLA attention backward, the context rows and dphi, deterministically.
//
// A context row r can be read by many queries (causal summaries: usually one
// query per row; sequence summaries: every query of a sequence reads its
// sequence's row). Its gradient, for every summary c and group g,
//   dctx_k[c][r, g] = Σ_{i reads r} Σ_{h ≡ g} coef_k[i,h,c] q_{i,h}
//   dctx_v[c][r, g] = Σ_{i reads r} Σ_{h ≡ g} coef_v[i,h,c] dO_{i,h}
// is gathered per row from the list of its readers in ascending order
// (the buckets of attention_buckets.cuh, built inside the backward's earlier
// launches), never scattered with floating-point atomics:
// one launch, ctx_gather, with three kinds of blocks:
//   - one per chunk of kChunk readers of a row with more than kChunk
//     readers: partial sums, threads over the (g, d) columns. The last of a
//     row's chunk blocks to finish (a counter per row, after a memory fence)
//     adds the row's partial sums in chunk order and writes the row;
//   - one per context row: a row with <= kChunk readers sums them directly
//     and writes the row (zero when nobody reads it); a longer one is left to
//     its last chunk block;
//   - one more, which needs nothing the others write, makes dphi:
//     dphi += β(1 − β) Σ_rows dbeta_row, summed in double in a fixed tree.
// (The chunks and the rows were two launches before, and dphi a third.)
#include <vector>

#include "backend/cuda/kernels/attention_buckets.cuh"

namespace wiola::cuda::kernels {

namespace {

using attn::Buckets;
using attn::kChunk;
using attn::kMaxCtx;

constexpr int kColThreads = 256;  // threads of the gather kernels

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
  int* chunks_done;  // [rows]: a row's chunk blocks finished; zeroed
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

// Writes context row r's gradients of column col from the sums ak, av.
template <class T>
__device__ void write_row(const Gather<T>& a, int r, int col, const float* ak, const float* av) {
  for (int c = 0; c < kMaxCtx; ++c) {
    if (c >= a.n_ctx) break;
    if (r >= a.ctx_rows[c]) continue;
    a.dctx_k[c][r * a.ld_dk[c] + col] = from_float<T>(ak[c]);
    a.dctx_v[c][r * a.ld_dv[c] + col] = from_float<T>(av[c]);
  }
}

// Row r's chunks' partial sums added in chunk order, and the row written.
// Read through volatile: other blocks wrote them in this launch.
template <class T>
__device__ void finish_chunked_row(const Gather<T>& a, int r) {
  const int width = a.kv_heads * a.head_dim;
  const volatile float* partials = a.partials;
  for (int col = threadIdx.x; col < width; col += blockDim.x) {
    float ak[kMaxCtx] = {}, av[kMaxCtx] = {};
    for (int chunk = a.chunk_start[r]; chunk < a.chunk_start[r + 1]; ++chunk)
      for (int c = 0; c < kMaxCtx; ++c) {
        if (c >= a.n_ctx) break;
        const volatile float* p = partials + ((std::int64_t(chunk) * a.n_ctx + c) * 2) * width;
        ak[c] += p[col];
        av[c] += p[width + col];
      }
    write_row(a, r, col, ak, av);
  }
}

// A chunk block: the partial sums of chunk `chunk`; the row's last one to
// finish writes the row.
template <class T>
__device__ void chunk_block(const Gather<T>& a, int chunk) {
  __shared__ int last;
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
  __threadfence();  // the partial sums are visible before the block counts itself done
  __syncthreads();
  if (threadIdx.x == 0) {
    const int chunks = a.chunk_start[lo + 1] - a.chunk_start[lo];
    last = atomicAdd(&a.chunks_done[lo], 1) == chunks - 1 ? 1 : 0;
  }
  __syncthreads();
  if (last) finish_chunked_row(a, lo);
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

// Blocks [0, max_chunks): chunks (those past the last chunk return); then
// one per context row; then dphi's.
template <class T>
__global__ void __launch_bounds__(kColThreads) ctx_gather(Gather<T> a, int max_chunks) {
  __shared__ double scratch[32];
  const int block = blockIdx.x;
  if (block < max_chunks) {  // block-uniform branches: their barriers are safe
    if (block < a.chunk_start[a.rows]) chunk_block(a, block);
    return;
  }
  const int r = block - max_chunks;
  if (r == a.rows) {
    add_dphi(a, scratch);
    return;
  }
  const int s0 = a.start[r], s1 = a.start[r + 1];
  if (s1 - s0 > kChunk) return;  // written by its last chunk block
  for (int col = threadIdx.x; col < a.kv_heads * a.head_dim; col += blockDim.x) {
    float ak[kMaxCtx] = {}, av[kMaxCtx] = {};
    gather(a, s0, s1, col, ak, av);
    write_row(a, r, col, ak, av);
  }
}

}  // namespace

attn::Buckets attn::make_buckets(const AttentionDims& dims, std::span<const Tensor> ctx_k,
                                const AttentionIndex& index, const Allocate& alloc,
                                std::vector<Tensor>& memory, Stream s) {
  const std::int64_t n = std::int64_t(dims.batch) * dims.seq;
  std::int64_t rows = 0, readable = INT32_MAX;
  for (const Tensor& c : ctx_k) {
    rows = std::max(rows, c.rows());
    readable = std::min(readable, c.rows());
  }
  // count, cursor and the done counters are counted into (atomics): one
  // block, one memset.
  auto ints = [&](std::int64_t count) {
    memory.push_back(alloc(DType::I32, count, 1));
    return static_cast<int*>(memory.back().data());
  };
  int* c = ints(3 * (rows + 1) + 1);
  memset_zero(c, memory.back().bytes(), s);
  Buckets bk;
  bk.rows = static_cast<int>(rows);
  bk.n = n;
  bk.seq = dims.seq;
  bk.readable = static_cast<int>(readable);
  bk.n_queries = static_cast<const std::int32_t*>(index.n_queries.data());
  bk.ctx_row = static_cast<const std::int32_t*>(index.ctx_row.data());
  bk.count = c;
  bk.cursor = c + (rows + 1);
  bk.chunks_done = c + 2 * (rows + 1);
  bk.done = c + 3 * (rows + 1);
  bk.key = ints(n);
  bk.start = ints(rows + 1);
  bk.chunk_start = ints(rows + 1);
  bk.unsorted = ints(n);
  bk.readers = ints(n);
  return bk;
}

void attn::attention_context_grads(const AttentionDims& dims, const Tensor& q, const Tensor& d_o,
                                   std::span<const Tensor> ctx_k, const Tensor& phi,
                                   const Buckets& bk, const float* coef_k, const float* coef_v,
                                   const float* dbeta_row, std::span<const Tensor> dctx_k,
                                   std::span<const Tensor> dctx_v, const Tensor& dphi,
                                   const Allocate& alloc, Stream s) {
  const auto stream = static_cast<cudaStream_t>(s);
  const std::int64_t n = std::int64_t(dims.batch) * dims.seq, rows = bk.rows;
  const int n_ctx = static_cast<int>(ctx_k.size());

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
    a.chunks_done = bk.chunks_done;
    WIOLA_LAUNCH(ctx_gather<T>, dim3(unsigned(max_chunks + rows + 1)), dim3(kColThreads), 0,
                 stream)(a, static_cast<int>(max_chunks));
    // Every reader's q, dO and coefficients gathered once (by a chunk's or a
    // row's block), at most every chunk's partial sums written and read back,
    // the rows' chunk counters, every context row's gradients written; dβ of
    // every row read and dphi read and written.
    const std::int64_t coefs = 2 * n * dims.heads * n_ctx * 4,
                       grads = 2 * std::int64_t(n_ctx) * rows * width * sizeof(T);
    WIOLA_CHECK_LAUNCH("ctx_gather", bytes_of(q) + bytes_of(d_o) + coefs + n * 4 +
                                         2 * bytes_of(partials) + rows * 8 + grads + n * 4 + 8);
  };
  with_compute_type(q.dtype(), run);
}

}  // namespace wiola::cuda::kernels
