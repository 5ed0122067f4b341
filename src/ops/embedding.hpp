#pragma once
// Token embedding lookup and its scatter-add backward.
#include <cstdint>

#include "ops/buckets.hpp"
#include "ops/parallel.hpp"

namespace wiola::ops {

// out[i] = table[tok[i]]; tok holds n indices (row stride ldt), all in [0, V).
template <class T>
void embedding_fwd(std::int64_t n, std::int64_t d, const std::int32_t* tok, std::int64_t ldt,
                   const T* table, std::int64_t ldtab, T* out, std::int64_t ldo) {
  for_each_row(n, d, [&](std::int64_t i) {
    const T* src = table + static_cast<std::int64_t>(tok[i * ldt]) * ldtab;
    T* dst = out + i * ldo;
    for (std::int64_t c = 0; c < d; ++c) dst[c] = src[c];
  });
}

// dtable[tok[i]] += dout[i]. Rows are grouped by token so every table row is
// updated by one thread, adding its rows in ascending i.
template <class T>
void embedding_bwd(std::int64_t n, std::int64_t d, std::int64_t vocab, const std::int32_t* tok,
                   std::int64_t ldt, const T* dout, std::int64_t ldd, T* dtable,
                   std::int64_t ldtab) {
  const Buckets rows_of = bucket_by_key(vocab, n, [&](std::int64_t i) { return tok[i * ldt]; });
#pragma omp parallel for schedule(dynamic, 64) if (n * d >= kMinParallelWork)
  for (std::int64_t v = 0; v < vocab; ++v) {
    const std::int64_t b0 = rows_of.start[static_cast<std::size_t>(v)];
    const std::int64_t b1 = rows_of.start[static_cast<std::size_t>(v + 1)];
    T* dst = dtable + v * ldtab;
    for (std::int64_t k = b0; k < b1; ++k) {
      const T* src = dout + rows_of.items[static_cast<std::size_t>(k)] * ldd;
      for (std::int64_t c = 0; c < d; ++c) dst[c] += src[c];
    }
  }
}

}  // namespace wiola::ops
