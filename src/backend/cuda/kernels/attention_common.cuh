#pragma once
// What the GCLA attention kernels share (attention_fwd.cu, attention_bwd.cu,
// attention_ctx.cu): the arguments, the tiling constants, tile loads into
// shared memory, the per-query visibility index, and the turns of the
// backward's deterministic dQ sum.
//
// Tiling. A block of kTileThreads = 128 threads (4 warps) works on one tile of
// kBQ = 64 query rows (128 in the forward) or kBK = 64 key rows of one head
// (or key/value group) of one sequence. Each warp owns 16 of the block's rows
// (32 in the forward). Tiles of Q, K, V, dO are staged in shared memory as
// ROWS x DHP arrays of the compute type, DHP = dh rounded up to 16, 32, 64,
// 96 or 128 with zero columns past dh (so any dh <= 128 works and
// contributes nothing through the padding), each row padded by 8 elements
// against bank conflicts.
//
// Products: attention_registers.cuh (per-warp tiles in registers, mma.sync
// in bf16), with tiles staged here by load_tile / load_tile_async.
//
// Visibility. Query row t of a sequence sees key rows [0, key_prefix[t]) and
// key row key_extra[t] (-1: none); rows t >= n_queries are padding and see
// nothing. A block skips every key tile that no query of its tile can see: it
// visits tiles [0, ceil(max prefix / 64)) and the tiles between its smallest
// and largest extra key. Index values come from the host-side plan builders
// and are not validated on the device; the kernels clamp them so that a bad
// value never reads outside a tensor.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <type_traits>

#include "backend/backend.hpp"
#include "backend/cuda/device_counters.hpp"
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/warp_mma.cuh"
#include "core/error.hpp"

namespace wiola::cuda::kernels::attn {

constexpr int kBQ = 64;                 // query rows per tile
constexpr int kBK = 64;                 // key rows per tile
constexpr int kWarps = 4;
constexpr int kTileThreads = kWarps * 32;  // threads per block of the tile kernels
constexpr int kMaxCtx = 8;              // context summaries (Λ <= 8)
constexpr int kMaxHeadDim = 128;
constexpr int kIntMax = 0x7fffffff;
constexpr unsigned kFull = 0xffffffffu;

static_assert(kBQ == kWarps * 16 && kBK == 64, "a warp owns 16 rows; scores are 16 x 64");

// Everything both passes read. Row strides (ld) are in elements; index arrays
// are contiguous I32.
template <class T>
struct Args {
  int batch, seq, heads, kv_heads, head_dim, n_ctx;
  float scale;  // 1/sqrt(dh)
  bool vec;     // q, k, v (and d_o) rows of every head start on 16-byte boundaries
  const T* q;
  std::int64_t ldq;
  const T* k;
  std::int64_t ldk;
  const T* v;
  std::int64_t ldv;
  const T* ctx_k[kMaxCtx];
  std::int64_t ld_ctx_k[kMaxCtx];
  const T* ctx_v[kMaxCtx];
  std::int64_t ld_ctx_v[kMaxCtx];
  int ctx_rows;  // rows every context tensor has (the smallest count)
  const T* phi;  // [1, 1], β = σ(φ); null without context (n_ctx = 0)
  const std::int32_t* n_queries;
  const std::int32_t* key_prefix;
  const std::int32_t* key_extra;
  const std::int32_t* ctx_row;
};

// Padded head dimension: 16, 32, 64, 96 or 128.
// The bytes of the attention operands, for WIOLA_CHECK_LAUNCH (distinct
// bytes: a tile that several blocks read, K and V tiles revisited by later
// query tiles or shared by the query heads of a group, is served by the L2
// cache and counts once).
struct AttentionBytes {
  std::int64_t q, kv, ctx, stats;  // q-shaped [N, H·dh]; k or v; all context k and v; [N, H] fp32
};
template <class T>
AttentionBytes attention_bytes(const Args<T>& a) {
  const std::int64_t n = std::int64_t(a.batch) * a.seq, dh = a.head_dim, e = sizeof(T);
  return {n * a.heads * dh * e, n * a.kv_heads * dh * e,
          2 * std::int64_t(a.n_ctx) * a.ctx_rows * a.kv_heads * dh * e, n * a.heads * 4};
}

inline int padded_head_dim(int dh) {
  return dh <= 16 ? 16 : dh <= 32 ? 32 : dh <= 64 ? 64 : dh <= 96 ? 96 : 128;
}

// Calls f(std::integral_constant<int, DHP>) for dh's padded head dimension.
template <class F>
void with_padded_head_dim(int dh, F&& f) {
  switch (padded_head_dim(dh)) {
    case 16: f(std::integral_constant<int, 16>{}); break;
    case 32: f(std::integral_constant<int, 32>{}); break;
    case 64: f(std::integral_constant<int, 64>{}); break;
    case 96: f(std::integral_constant<int, 96>{}); break;
    default: f(std::integral_constant<int, 128>{}); break;
  }
}

constexpr std::size_t align128(std::size_t x) { return (x + 127) / 128 * 128; }

// Host: counts the FLOPs of the tile products a kernel runs
// (device_counters.hpp): `products` products of QROWS x 64 x DHP for each
// (query tile of QROWS rows, 64-key tile) pair of a head that a causal mask
// leaves: query tile i visits the key tiles below its last row. A block
// under an ATM plan may skip some of them, so there the count is an upper
// bound.
template <int DHP, int QROWS = kBQ>
void count_tile_products(int batch, int heads, int seq, int products) {
  std::int64_t pairs = 0;
  for (std::int64_t q0 = 0; q0 < seq; q0 += QROWS)
    pairs += (std::min<std::int64_t>(q0 + QROWS, seq) + kBK - 1) / kBK;
  count_device_event(DeviceEvent::AttentionFlops, std::int64_t(batch) * heads * pairs * products *
                                                      2 * std::int64_t(QROWS) * kBK * DHP);
}

// Host: raises a kernel's dynamic shared memory limit above the default 48 KiB.
template <class Kernel>
void allow_shared(Kernel* kernel, std::size_t bytes, const char* name) {
  const cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  require(e == cudaSuccess, name, ": cannot use ", bytes, " bytes of shared memory per block: ",
          cudaGetErrorString(e));
}

// Host: whether every row of every head of `t` starts on a 16-byte boundary.
inline bool rows_aligned16(const Tensor& t, int head_dim) {
  const std::size_t es = dtype_size(t.dtype());
  return reinterpret_cast<std::uintptr_t>(t.data()) % 16 == 0 &&
         (static_cast<std::size_t>(t.ld()) * es) % 16 == 0 &&
         (static_cast<std::size_t>(head_dim) * es) % 16 == 0;
}

template <class T>
Args<T> make_args(const AttentionDims& d, const Tensor& q, const Tensor& k, const Tensor& v,
                  std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v,
                  const Tensor& phi, const AttentionIndex& index) {
  Args<T> a{};
  a.batch = d.batch;
  a.seq = d.seq;
  a.heads = d.heads;
  a.kv_heads = d.kv_heads;
  a.head_dim = d.head_dim;
  a.n_ctx = static_cast<int>(ctx_k.size());
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.head_dim)));
  a.vec = rows_aligned16(q, d.head_dim) && rows_aligned16(k, d.head_dim) &&
          rows_aligned16(v, d.head_dim);
  a.q = static_cast<const T*>(q.data());
  a.ldq = q.ld();
  a.k = static_cast<const T*>(k.data());
  a.ldk = k.ld();
  a.v = static_cast<const T*>(v.data());
  a.ldv = v.ld();
  std::int64_t rows = INT32_MAX;
  for (std::size_t c = 0; c < ctx_k.size(); ++c) {
    a.ctx_k[c] = static_cast<const T*>(ctx_k[c].data());
    a.ld_ctx_k[c] = ctx_k[c].ld();
    a.ctx_v[c] = static_cast<const T*>(ctx_v[c].data());
    a.ld_ctx_v[c] = ctx_v[c].ld();
    rows = std::min(rows, ctx_k[c].rows());
  }
  a.ctx_rows = static_cast<int>(rows);
  a.phi = ctx_k.empty() ? nullptr : static_cast<const T*>(phi.data());
  a.n_queries = static_cast<const std::int32_t*>(index.n_queries.data());
  a.key_prefix = static_cast<const std::int32_t*>(index.key_prefix.data());
  a.key_extra = static_cast<const std::int32_t*>(index.key_extra.data());
  a.ctx_row = static_cast<const std::int32_t*>(index.ctx_row.data());
  return a;
}

// SRPE inside the attention kernels (AttentionRotary): the tables with the
// query rows' positions and with the key rows'. on = false: none.
struct AttnRotary {
  bool on;
  RotaryTables q, kv;
};
inline AttnRotary make_rotary(const AttentionRotary& r) {
  if (!r.defined()) return AttnRotary{};
  const auto tables = [&](const Tensor& pos) {
    return RotaryTables{static_cast<const std::int32_t*>(pos.data()),
                        static_cast<const float*>(r.cos_tab.data()), r.cos_tab.ld(),
                        static_cast<const float*>(r.sin_tab.data()), r.sin_tab.ld(),
                        r.cos_tab.rows(), r.pairs == RotaryPairs::Interleaved};
  };
  return AttnRotary{true, tables(r.pos_q), tables(r.pos_kv)};
}

// ---- device helpers ------------------------------------------------------------

__device__ __forceinline__ int clampi(int x, int lo, int hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// β = σ(φ) of the blend; 0 without context (O = O_self, φ not given).
template <class T>
__device__ __forceinline__ float attention_beta(const Args<T>& a) {
  return a.n_ctx > 0 ? sigmoid(to_float(a.phi[0])) : 0.0f;
}

template <class T>
__device__ __forceinline__ int valid_queries(const Args<T>& a, int b) {
  return clampi(a.n_queries[b], 0, a.seq);
}

// The context row query row i reads (clamped into the context tensors).
template <class T>
__device__ __forceinline__ int context_row(const Args<T>& a, std::int64_t i) {
  return clampi(a.ctx_row[i], 0, a.ctx_rows - 1);
}

// Copies rows [0, rows) of a ROWS x dh block of global memory (first element
// `src`, row stride `ld`) into a ROWS x DHP shared tile of row stride
// DHP + 8; everything else of the tile (rows past `rows`, rows with
// keep[r] == 0 when `keep` is given, columns past dh) becomes zero. `vec`:
// rows start on 16-byte boundaries and dh is a multiple of 16 bytes, so whole
// 16-byte chunks are copied. Every thread of the block takes part.
template <class T, int DHP, int ROWS>
__device__ void load_tile(T* dst, const T* src, std::int64_t ld, int rows, int dh, bool vec,
                          const unsigned char* keep) {
  constexpr int kLd = DHP + 8;
  constexpr int kPer = 16 / int(sizeof(T));  // elements per 16-byte chunk
  constexpr int kChunks = DHP / kPer;
  if (threadIdx.x == 0) WIOLA_COUNT_SHARED_STAGING(std::int64_t(ROWS) * DHP * sizeof(T));
  for (int idx = threadIdx.x; idx < ROWS * kChunks; idx += blockDim.x) {
    const int r = idx / kChunks, c0 = (idx % kChunks) * kPer;
    const bool row_ok = r < rows && (keep == nullptr || keep[r] != 0);
    T* d = dst + r * kLd + c0;
    if (vec) {
      uint4 val = make_uint4(0, 0, 0, 0);
      if (row_ok && c0 < dh) val = *reinterpret_cast<const uint4*>(src + r * ld + c0);
      *reinterpret_cast<uint4*>(d) = val;
    } else {
      for (int e = 0; e < kPer; ++e)
        d[e] = (row_ok && c0 + e < dh) ? src[r * ld + c0 + e] : from_float<T>(0.0f);
    }
  }
}

// load_tile with cp.async (warp_mma.cuh) when `vec`: the copies are issued
// and land at the caller's cp_async_wait, so a tile can be fetched while the
// previous one is in use. Without `vec` the elements are stored at once, as
// load_tile does. Either way the tile is the block's after a wait and a
// barrier.
template <class T, int DHP, int ROWS>
__device__ void load_tile_async(T* dst, const T* src, std::int64_t ld, int rows, int dh, bool vec,
                                const unsigned char* keep) {
  if (!vec) {
    load_tile<T, DHP, ROWS>(dst, src, ld, rows, dh, false, keep);
    return;
  }
  constexpr int kLd = DHP + 8;
  constexpr int kPer = 16 / int(sizeof(T));
  constexpr int kChunks = DHP / kPer;
  for (int idx = threadIdx.x; idx < ROWS * kChunks; idx += blockDim.x) {
    const int r = idx / kChunks, c0 = (idx % kChunks) * kPer;
    const bool fill = r < rows && (keep == nullptr || keep[r] != 0) && c0 < dh;
    // A chunk left zero names the tile's first element, which is not read.
    mma::cp_async16(dst + r * kLd + c0, fill ? src + r * ld + c0 : src, fill);
  }
}

// SRPE (sign 1) of rows [0, rows) of one head, src to dst (which may be
// src: each pair is read whole before it is written), positions from row
// `first` of the tables' position array on, leaving out rows with
// keep[r] == 0 (null: none). Every thread of the block takes part; the
// caller syncs before its threads read dst.
template <class T>
__device__ void rotate_rows(const T* src, std::int64_t ld_src, T* dst, std::int64_t ld_dst,
                            int rows, int dh, const RotaryTables& tab, std::int64_t first,
                            const unsigned char* keep) {
  const int half = dh / 2;
  for (int idx = threadIdx.x; idx < rows * half; idx += blockDim.x) {
    const int r = idx / half, j = idx % half;
    if (keep != nullptr && keep[r] == 0) continue;
    float c, s, ya, yb;
    rotary_coefficients(tab, first + r, j, 1.0f, c, s);
    int ca, cb;
    rotary_columns(j, half, tab.interleaved, ca, cb);
    rotate_pair(to_float(src[r * ld_src + ca]), to_float(src[r * ld_src + cb]), c, s, ya, yb);
    dst[r * ld_dst + ca] = from_float<T>(ya);
    dst[r * ld_dst + cb] = from_float<T>(yb);
  }
}

// The same map on rows [0, rows) of a tile staged by load_tile, in place,
// leaving out the rows load_tile left zero (keep as load_tile took it).
template <class T, int DHP>
__device__ void rotate_tile(T* tile, int rows, int dh, const RotaryTables& tab,
                            std::int64_t first, const unsigned char* keep) {
  rotate_rows(tile, DHP + 8, tile, DHP + 8, rows, dh, tab, first, keep);
}

// Loads the visibility index of query rows [q0, q0 + ROWS) of sequence b into
// shared pre[ROWS], ext[ROWS]: prefix 0 and extra -1 for padding rows, extra -1
// when it lies inside the prefix (it is seen once either way) or outside the
// sequence. stat[0] = largest prefix, stat[1] / stat[2] = smallest / largest
// extra key (kIntMax / -1 when none). Every thread of the block takes part;
// ends with __syncthreads.
template <int ROWS = kBQ, class T>
__device__ void load_query_index(const Args<T>& a, int b, int q0, int* pre, int* ext, int* stat) {
  if (threadIdx.x == 0) {
    stat[0] = 0;
    stat[1] = kIntMax;
    stat[2] = -1;
  }
  __syncthreads();
  const int nq = valid_queries(a, b);
  for (int r = threadIdx.x; r < ROWS; r += blockDim.x) {
    const int t = q0 + r;
    int p = 0, e = -1;
    if (t < nq) {
      const std::int64_t i = std::int64_t(b) * a.seq + t;
      p = clampi(a.key_prefix[i], 0, a.seq);
      e = a.key_extra[i];
      if (e < p || e >= a.seq) e = -1;
    }
    pre[r] = p;
    ext[r] = e;
    if (p > 0) atomicMax(&stat[0], p);
    if (e >= 0) {
      atomicMin(&stat[1], e);
      atomicMax(&stat[2], e);
    }
  }
  __syncthreads();
}

// The key tiles a query tile with statistics `stat` visits, in order.
struct KeyTiles {
  int n_prefix = 0, extra_lo = 0, n = 0;
  __device__ int tile(int it) const { return it < n_prefix ? it : extra_lo + (it - n_prefix); }
};
__device__ __forceinline__ KeyTiles key_tiles(const int* stat) {
  KeyTiles k;
  k.n_prefix = (stat[0] + kBK - 1) / kBK;
  k.n = k.n_prefix;
  if (stat[2] >= 0) {
    k.extra_lo = stat[1] / kBK > k.n_prefix ? stat[1] / kBK : k.n_prefix;
    const int hi = stat[2] / kBK;
    if (hi >= k.extra_lo) k.n += hi - k.extra_lo + 1;
  }
  return k;
}
// Whether a query tile with statistics `stat` visits key tile kb.
__device__ __forceinline__ bool visits(const int* stat, int kb) {
  return stat[0] > kb * kBK || (stat[2] >= 0 && stat[1] < (kb + 1) * kBK && stat[2] >= kb * kBK);
}

// used[j] = 1 when some query of the tile (ROWS rows) sees key k0 + j. Keys
// nobody sees are loaded as zero where a product would multiply them by a
// zero weight (0 · Inf would poison the sum). Ends with __syncthreads.
template <int ROWS = kBQ>
__device__ __forceinline__ void mark_used_keys(int k0, const int* stat, const int* ext,
                                               unsigned char* used) {
  for (int j = threadIdx.x; j < kBK; j += blockDim.x) used[j] = k0 + j < stat[0] ? 1 : 0;
  __syncthreads();
  for (int r = threadIdx.x; r < ROWS; r += blockDim.x) {
    const int e = ext[r];
    if (e >= k0 && e < k0 + kBK) used[e - k0] = 1;
  }
  __syncthreads();
}

// Sum over the lane pair (2r, 2r + 1) that owns a row.
__device__ __forceinline__ float pair_sum(float v) { return v + __shfl_xor_sync(kFull, v, 1); }
__device__ __forceinline__ float warp_sum(float v) {
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(kFull, v, m);
  return v;
}

// Turns between blocks (the deterministic dQ sum): one thread of a block
// waits until `turn` has reached `mine`, passes it on to the next with
// pass_turn. Blocks wait only for blocks of lower index, which a GPU has
// already started (as FlashAttention-2's deterministic mode relies on). The
// emulation runs blocks one after another, so a turn not yet reached there
// can never come: it throws instead of spinning.
__device__ __forceinline__ void wait_turn(int* turn, int mine) {
#if defined(WIOLA_CUDA_EMULATION)
  ::wiola::emu::expect_turn(atomicAdd(turn, 0), mine);
#else
  while (atomicAdd(turn, 0) != mine) __nanosleep(100);
#endif
  __threadfence();  // what the blocks before wrote is seen after the turn
}
// After the block's writes and a barrier: the next block's turn.
__device__ __forceinline__ void pass_turn(int* turn) {
  __threadfence();
  atomicAdd(turn, 1);
}

template <class T>
inline constexpr bool kTensorCores = std::is_same_v<T, __nv_bfloat16>;  // else fp32, for checking

}  // namespace wiola::cuda::kernels::attn
