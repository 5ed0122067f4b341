#pragma once
// A deterministic scatter-add of rows, dst[key(i)] += weight(i) · src[source(i)]
// over items i = 0..items−1, without floating-point atomics (whose order, and
// so whose rounding, varies from run to run). Used by embedding_bwd (items are
// tokens, keys their ids) and merge_rows_bwd (items are (row, slot) pairs,
// keys the source rows they read).
//
// Owner computes: destination rows are split into `partitions` classes by
// key mod partitions (a power of two), columns into tiles of kScatterTile.
// One warp owns one (class, tile) pair: it walks all items in ascending order
// -- the block stages kScatterChunk keys at a time in shared memory, and the
// warp finds the items of its class 32 at a time with a ballot -- and adds
// each one into its columns, lane l owning columns tile0 + l + 32k. So every
// element of dst is read and written by exactly one thread, which adds its
// contributions one after another in ascending item order (the order of the
// CPU reference), in fp32: the result is the same bits on every run and every
// device, whatever the scheduling.
//
// Consecutive contributions to the same row stay in registers and are written
// once; a row that comes back later is read again. A bf16 dst is therefore
// rounded once per run of consecutive contributions (fp32 dst: no difference).
// Cost: each warp reads every key (from shared memory, 32 per ballot), and
// works through its own rows one dependent read-add-write after another; the
// partition count is chosen so that about kScatterTargetWarps warps (several
// per SM) share the rows, which shortens those chains while keeping the key
// scans cheap. src and dst must not overlap.
#include <cstdint>

#include "backend/cuda/kernels/common.cuh"

namespace wiola::cuda::kernels {

constexpr int kScatterWarps = 8;                             // warps per block
constexpr int kScatterLaneCols = 8;                          // columns per lane in a tile
constexpr int kScatterTile = 32 * kScatterLaneCols;          // columns per warp
constexpr int kScatterChunk = 1024;                          // keys staged per round
constexpr std::int64_t kScatterTargetWarps = 4096;

struct ScatterPlan {
  int partitions = 1;  // a power of two
  std::int64_t tiles = 0, warps = 0;
  unsigned blocks = 0;
};

// What owner_scatter_add reads and writes, for WIOLA_CHECK_LAUNCH (distinct
// bytes: the keys every block stages come from the L2 cache): every item's
// key (`key_bytes` of index per item) and source row, and the destination
// rows the items add into, read and written: at most one per item.
inline std::int64_t scatter_bytes(std::int64_t items, std::int64_t dst_rows, std::int64_t cols,
                                  std::int64_t src_elem, std::int64_t dst_elem,
                                  std::int64_t key_bytes) {
  const std::int64_t touched = items < dst_rows ? items : dst_rows;
  return items * key_bytes + items * cols * src_elem + 2 * touched * cols * dst_elem;
}

// Partitions: the largest power of two <= dst_rows and <= target / tiles.
inline ScatterPlan plan_scatter(std::int64_t dst_rows, std::int64_t cols) {
  ScatterPlan p;
  p.tiles = (cols + kScatterTile - 1) / kScatterTile;
  if (p.tiles == 0 || dst_rows == 0) return p;
  const std::int64_t want = kScatterTargetWarps / p.tiles;
  while (std::int64_t(p.partitions) * 2 <= dst_rows && std::int64_t(p.partitions) * 2 <= want)
    p.partitions *= 2;
  p.warps = p.partitions * p.tiles;
  p.blocks = static_cast<unsigned>((p.warps + kScatterWarps - 1) / kScatterWarps);
  return p;
}

// Map: __device__ int key(std::int64_t item) const (< 0: the item adds nothing;
// keys >= dst_rows are skipped, so a bad index never writes out of bounds),
// std::int64_t source(std::int64_t item) const, float weight(std::int64_t item) const.
template <class Tin, class Tout, class Map>
__global__ void __launch_bounds__(kScatterWarps * 32)
    owner_scatter_add(std::int64_t items, std::int64_t cols, std::int64_t dst_rows,
                      int partitions, std::int64_t warps, Map map, const Tin* src,
                      std::int64_t lds, Tout* dst, std::int64_t ldd) {
  __shared__ int keys[kScatterChunk];
  const int lane = threadIdx.x % 32;
  const std::int64_t task = std::int64_t(blockIdx.x) * kScatterWarps + threadIdx.x / 32;
  const bool active = task < warps;  // the same for the whole warp
  const int part = static_cast<int>(task % partitions);
  const std::int64_t col0 = (task / partitions) * kScatterTile + lane;

  float acc[kScatterLaneCols] = {};
  int run = -1;  // the row whose sums are in acc
  auto flush = [&] {
    if (run < 0) return;
    Tout* out = dst + std::int64_t(run) * ldd;
    WIOLA_UNROLL
    for (int k = 0; k < kScatterLaneCols; ++k) {
      const std::int64_t c = col0 + 32 * k;
      if (c < cols) out[c] = from_float<Tout>(acc[k]);
    }
  };

  for (std::int64_t base = 0; base < items; base += kScatterChunk) {
    const int n = static_cast<int>(items - base < kScatterChunk ? items - base : kScatterChunk);
    __syncthreads();  // every warp is done with the previous chunk
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
      const int key = map.key(base + k);
      keys[k] = key < dst_rows ? key : -1;
    }
    __syncthreads();
    if (!active) continue;
    for (int g = 0; g < n; g += 32) {
      const int key = g + lane < n ? keys[g + lane] : -1;
      unsigned hits = __ballot_sync(0xffffffffu, key >= 0 && (key & (partitions - 1)) == part);
      while (hits != 0) {  // in ascending item order; hits is the same in every lane
        const int bit = __ffs(static_cast<int>(hits)) - 1;
        hits &= hits - 1;
        const std::int64_t item = base + g + bit;
        const int row = keys[g + bit];
        // Both loads (the item's row, and the new row when a run starts) are
        // issued before the previous run is stored: row != run, so they touch
        // other rows than that store, and their latencies overlap.
        const float w = map.weight(item);
        const Tin* in = src + map.source(item) * lds;
        float v[kScatterLaneCols];
        WIOLA_UNROLL
        for (int k = 0; k < kScatterLaneCols; ++k) {
          const std::int64_t c = col0 + 32 * k;
          v[k] = c < cols ? to_float(in[c]) : 0.0f;
        }
        if (row != run) {
          const Tout* old = dst + std::int64_t(row) * ldd;
          float start[kScatterLaneCols];
          WIOLA_UNROLL
          for (int k = 0; k < kScatterLaneCols; ++k) {
            const std::int64_t c = col0 + 32 * k;
            start[k] = c < cols ? to_float(old[c]) : 0.0f;
          }
          flush();
          run = row;
          WIOLA_UNROLL
          for (int k = 0; k < kScatterLaneCols; ++k) acc[k] = start[k];
        }
        WIOLA_UNROLL
        for (int k = 0; k < kScatterLaneCols; ++k) acc[k] += w * v[k];
      }
    }
  }
  if (active) flush();
}

}  // namespace wiola::cuda::kernels
