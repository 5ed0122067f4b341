#pragma once
// What every kernel file shares: fp32 arithmetic on fp32 or bf16 storage, the
// launch shape of elementwise kernels, and deterministic block reductions.
#include <cstdint>
#include <span>

#include "backend/cuda/cuda_compat.hpp"
#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda::kernels {

constexpr int kThreads = 256;  // threads per block of the elementwise kernels
constexpr std::int64_t kMaxBlocks = 4096;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ double to_double(double v) { return v; }
__device__ __forceinline__ double to_double(float v) { return v; }
__device__ __forceinline__ double to_double(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}

// σ(x) in fp32 without overflow for large |x|: the one form every kernel
// uses, so a gate fused into another kernel has the elementwise op's bits.
__device__ __forceinline__ float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}

// GCLA's output gate y = σ(g) x and its gradients, per element: the
// elementwise op and the attention kernels that take the gate share them, so
// both give the same bits.
__device__ __forceinline__ float gate_fwd(float g, float x) { return sigmoid(g) * x; }
__device__ __forceinline__ void gate_bwd(float g, float x, float dy, float& dg, float& dx) {
  const float s = sigmoid(g);
  dg = dy * x * s * (1.0f - s);
  dx = dy * s;
}

// A rotary map (SRPE, spiral RoPE) of one pair of a head, shared by the SRPE
// kernel and the attention kernels that take SRPE, so both give the same
// bits. The pair's columns: (j, j + dh/2) (rotate-half) or (2j, 2j + 1)
// (interleaved); its coefficients at position p: c = cos_tab[p, j] and
// s = sign · sin_tab[p, j] (sign −1: the transpose, the backward), NaN for a
// position outside the tables; then y_a = a c − b s, y_b = a s + b c.
struct RotaryTables {
  const std::int32_t* pos;  // the rows' positions (a row index into the tables)
  const float* cos_tab;
  std::int64_t ldc;
  const float* sin_tab;
  std::int64_t lds;
  std::int64_t npos;  // rows of the tables
  bool interleaved;
};
__device__ __forceinline__ void rotary_columns(int j, int half, bool interleaved, int& ca,
                                               int& cb) {
  ca = interleaved ? 2 * j : j;
  cb = ca + (interleaved ? 1 : half);
}
__device__ __forceinline__ void rotary_coefficients(const RotaryTables& r, std::int64_t row, int j,
                                                    float sign, float& c, float& s) {
  const std::int64_t p = r.pos[row];
  const bool ok = p >= 0 && p < r.npos;
  c = ok ? r.cos_tab[p * r.ldc + j] : NAN;
  s = ok ? sign * r.sin_tab[p * r.lds + j] : NAN;
}
__device__ __forceinline__ void rotate_pair(float a, float b, float c, float s, float& ya,
                                            float& yb) {
  ya = a * c - b * s;
  yb = a * s + b * c;
}

// Calls f(T{}) with T the storage type of a compute dtype: bf16 or fp32.
template <class F>
void with_compute_type(DType dt, F&& f) {
  if (dt == DType::BF16)
    f(__nv_bfloat16{});
  else
    f(float{});
}

// A view's bytes (its elements, not its row stride): what a kernel that
// touches each element once reads or writes of it (WIOLA_CHECK_LAUNCH).
inline std::int64_t bytes_of(const Tensor& t) { return static_cast<std::int64_t>(t.bytes()); }

// Blocks for a grid-stride loop over n elements.
inline unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

// `Width` consecutive elements, moved with 16-byte loads and stores
// (Width · sizeof(T) is a multiple of 16; the first element 16-byte aligned).
template <class T, int Width>
struct alignas(16) Chunk {
  static_assert(Width * sizeof(T) % 16 == 0, "a chunk is whole 16-byte words");
  T v[Width];
};

// Whether a view's rows start 16-byte aligned and hold whole chunks of
// `width` elements of `elem_bytes` each.
inline bool rows_in_chunks(const void* p, std::int64_t ld, std::int64_t cols, int width,
                           std::int64_t elem_bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && ld * elem_bytes % 16 == 0 &&
         cols % width == 0;
}

// The chunked walk of views of one shape: rows x chunks of `width`
// elements, or one long row when every view is contiguous (full blocks
// whatever the width). Not ok when some view's rows do not hold whole
// 16-byte-aligned chunks.
struct ChunkWalk {
  bool ok = false;
  bool contiguous = false;
  std::int64_t rows = 0, chunks = 0;
  // The row stride the chunked kernel takes for `t` (one of the views).
  std::int64_t ld_of(const Tensor& t) const { return contiguous ? t.numel() : t.ld(); }
};
inline ChunkWalk chunk_walk(std::span<const Tensor* const> views, int width) {
  const Tensor& shape = *views.front();
  ChunkWalk w;
  w.contiguous = true;
  for (const Tensor* t : views) {
    if (!rows_in_chunks(t->data(), t->ld(), shape.cols(), width, dtype_size(t->dtype()))) return w;
    w.contiguous = w.contiguous && t->ld() == shape.cols();
  }
  w.ok = true;
  w.rows = w.contiguous ? 1 : shape.rows();
  w.chunks = (w.contiguous ? shape.numel() : shape.cols()) / width;
  return w;
}

// The launch shape of a 2D grid-stride loop over rows x units (a unit: one
// chunk or pack per thread): threads across a row's units (a warp at
// least), the rest of the block down the rows. No thread divides to find
// its element.
struct Grid2D {
  dim3 grid, block;
};
inline Grid2D grid_2d(std::int64_t rows, std::int64_t units) {
  const std::int64_t tx = units >= kThreads ? kThreads : (units + 31) / 32 * 32;
  const std::int64_t bx = tx < 32 ? 32 : tx;
  const std::int64_t ty = kThreads / bx;
  const std::int64_t gx = (units + bx - 1) / bx, gy = (rows + ty - 1) / ty;
  return {dim3(static_cast<unsigned>(gx < kMaxBlocks ? gx : kMaxBlocks),
               static_cast<unsigned>(gy < 65535 ? gy : 65535)),
          dim3(static_cast<unsigned>(bx), static_cast<unsigned>(ty))};
}

// Element e of a rows x cols view, row by row.
struct Index2D {
  std::int64_t r, c;
};
__device__ __forceinline__ Index2D split(std::int64_t e, std::int64_t cols) {
  return {e / cols, e % cols};
}

// Sum of `v` over the block (blockDim.x a multiple of 32, at most 1024),
// combined in a fixed order; every thread gets the result. `scratch` holds
// 32 values of T in shared memory.
template <class T>
__device__ T block_sum(T v, T* scratch) {
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < warps; ++w) total += scratch[w];
  return total;
}

template <class T>
__device__ T block_max(T v, T* scratch) {
  for (int m = 16; m > 0; m /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T best = scratch[0];
  for (int w = 1; w < warps; ++w) best = fmaxf(best, scratch[w]);
  return best;
}

}  // namespace wiola::cuda::kernels
