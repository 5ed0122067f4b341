#pragma once
// Loop helpers shared by the CPU kernels. Every parallel loop in src/ops gives
// each iteration its own outputs and fixes the order of every sum, so results
// are bit-identical whatever the number of OpenMP threads.
#include <algorithm>
#include <cstdint>

namespace wiola::ops {

// Work below this many elements stays on the calling thread: starting a
// parallel region costs more than it saves.
inline constexpr std::int64_t kMinParallelWork = 32768;
// Column block of the elementwise loops: long enough to vectorise, short
// enough that a single long vector (a 1 x n parameter range) still splits.
inline constexpr std::int64_t kColumnBlock = 2048;

// Calls body(r, c0, c1) for every row r and column block [c0, c1) of a
// rows x cols view, in parallel when the view is large enough.
template <class F>
void for_each_block(std::int64_t rows, std::int64_t cols, F&& body) {
  if (rows <= 0 || cols <= 0) return;
  const std::int64_t nblocks = (cols + kColumnBlock - 1) / kColumnBlock;
  const bool parallel = rows * cols >= kMinParallelWork;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t b = 0; b < nblocks; ++b)
      body(r, b * kColumnBlock, std::min(cols, (b + 1) * kColumnBlock));
}

// Calls body(r) for every row, in parallel when rows * cols is large enough.
template <class F>
void for_each_row(std::int64_t rows, std::int64_t cols, F&& body) {
  const bool parallel = rows > 1 && rows * cols >= kMinParallelWork;
#pragma omp parallel for schedule(static) if (parallel)
  for (std::int64_t r = 0; r < rows; ++r) body(r);
}

}  // namespace wiola::ops
