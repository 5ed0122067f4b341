#pragma once
// Scatter-adds (embedding_bwd, merge_rows_bwd, the attention context
// gradients) can hit one destination row from several source rows. Grouping
// the sources by destination first lets the adds run in parallel over
// destinations, each summing its sources in ascending order: race-free and
// independent of the thread count.
#include <cstdint>
#include <vector>

namespace wiola::ops {

// Items of key k are items[start[k] .. start[k+1]), in ascending item order.
struct Buckets {
  std::vector<std::int64_t> start;
  std::vector<std::int64_t> items;
};

// Groups items 0..n_items-1 by key_of(item) in [0, n_keys); items whose key is
// negative are left out. key_of must return the same key on both passes.
template <class KeyOf>
Buckets bucket_by_key(std::int64_t n_keys, std::int64_t n_items, KeyOf key_of) {
  Buckets b;
  b.start.assign(static_cast<std::size_t>(n_keys + 1), 0);
  for (std::int64_t i = 0; i < n_items; ++i) {
    const std::int64_t k = key_of(i);
    if (k >= 0) ++b.start[static_cast<std::size_t>(k + 1)];
  }
  for (std::int64_t k = 0; k < n_keys; ++k)
    b.start[static_cast<std::size_t>(k + 1)] += b.start[static_cast<std::size_t>(k)];
  b.items.resize(static_cast<std::size_t>(b.start[static_cast<std::size_t>(n_keys)]));
  std::vector<std::int64_t> next(b.start.begin(), b.start.end() - 1);
  for (std::int64_t i = 0; i < n_items; ++i) {
    const std::int64_t k = key_of(i);
    if (k >= 0) b.items[static_cast<std::size_t>(next[static_cast<std::size_t>(k)]++)] = i;
  }
  return b;
}

}  // namespace wiola::ops
