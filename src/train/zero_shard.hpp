#pragma once
// Where ZeRO cuts a stage's flat buffer between its data-parallel replicas
// (zero_optimizer.hpp; checkpoint.cpp writes by the same cut).
#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/alignment.hpp"

namespace wiola {

// Data-parallel rank r's shard [first, second) of a flat buffer of `total`
// elements split over `dp` ranks. Boundaries fall on multiples of
// kAlignElements, so every shard (and the optimizer state, master weights and
// reduced gradients kept for it) starts 256-byte aligned (core/alignment.hpp);
// shards differ by at most that many elements, and the last ends at `total`.
inline std::pair<std::int64_t, std::int64_t> zero_shard(std::int64_t total, int dp, int r) {
  const std::int64_t steps = (total + kAlignElements - 1) / kAlignElements;
  const auto start = [&](int i) { return std::min(total, steps * i / dp * kAlignElements); };
  return {start(r), start(r + 1)};
}

}  // namespace wiola
