#pragma once
// GCLA layer summaries of x [batch*seq, d]: the causal prefix mean (one row
// per position) and the whole-sequence mean (one row per sequence). Running
// sums are kept in double and run down the rows of a column block, so each
// thread owns whole columns of one sequence.
#include <algorithm>
#include <cstdint>

#include "ops/parallel.hpp"

namespace wiola::ops {

inline constexpr std::int64_t kSummaryBlock = 128;

// Calls body(b, c0, c1) for each sequence and column block, in parallel.
template <class F>
void for_each_sequence_block(std::int64_t batch, std::int64_t seq, std::int64_t d, F&& body) {
  const std::int64_t nblocks = (d + kSummaryBlock - 1) / kSummaryBlock;
#pragma omp parallel for collapse(2) schedule(static) if (batch * seq * d >= kMinParallelWork)
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t k = 0; k < nblocks; ++k)
      body(b, k * kSummaryBlock, std::min(d, (k + 1) * kSummaryBlock));
}

// s[b,t] = (1/(t+1)) Σ_{u<=t} x[b,u]
template <class T>
void summary_causal_fwd(std::int64_t batch, std::int64_t seq, std::int64_t d, const T* x,
                        std::int64_t ldx, T* s, std::int64_t lds) {
  for_each_sequence_block(batch, seq, d, [&](std::int64_t b, std::int64_t c0, std::int64_t c1) {
    double acc[kSummaryBlock] = {};
    for (std::int64_t t = 0; t < seq; ++t) {
      const T* xr = x + (b * seq + t) * ldx;
      T* sr = s + (b * seq + t) * lds;
      const double inv = 1.0 / static_cast<double>(t + 1);
      for (std::int64_t c = c0; c < c1; ++c) {
        acc[c - c0] += static_cast<double>(xr[c]);
        sr[c] = static_cast<T>(acc[c - c0] * inv);
      }
    }
  });
}

// dx[b,u] += Σ_{t>=u} ds[b,t] / (t+1): a running sum from the last row back.
template <class T>
void summary_causal_bwd(std::int64_t batch, std::int64_t seq, std::int64_t d, const T* ds,
                        std::int64_t ldds, T* dx, std::int64_t lddx) {
  for_each_sequence_block(batch, seq, d, [&](std::int64_t b, std::int64_t c0, std::int64_t c1) {
    double acc[kSummaryBlock] = {};
    for (std::int64_t t = seq - 1; t >= 0; --t) {
      const T* dsr = ds + (b * seq + t) * ldds;
      T* dxr = dx + (b * seq + t) * lddx;
      const double inv = 1.0 / static_cast<double>(t + 1);
      for (std::int64_t c = c0; c < c1; ++c) {
        acc[c - c0] += static_cast<double>(dsr[c]) * inv;
        dxr[c] = static_cast<T>(dxr[c] + acc[c - c0]);
      }
    }
  });
}

// s[b] = (1/seq) Σ_u x[b,u]
template <class T>
void summary_sequence_fwd(std::int64_t batch, std::int64_t seq, std::int64_t d, const T* x,
                          std::int64_t ldx, T* s, std::int64_t lds) {
  for_each_sequence_block(batch, seq, d, [&](std::int64_t b, std::int64_t c0, std::int64_t c1) {
    double acc[kSummaryBlock] = {};
    for (std::int64_t t = 0; t < seq; ++t) {
      const T* xr = x + (b * seq + t) * ldx;
      for (std::int64_t c = c0; c < c1; ++c) acc[c - c0] += static_cast<double>(xr[c]);
    }
    const double inv = 1.0 / static_cast<double>(seq);
    for (std::int64_t c = c0; c < c1; ++c) s[b * lds + c] = static_cast<T>(acc[c - c0] * inv);
  });
}

// dx[b,u] += ds[b] / seq
template <class T>
void summary_sequence_bwd(std::int64_t batch, std::int64_t seq, std::int64_t d, const T* ds,
                          std::int64_t ldds, T* dx, std::int64_t lddx) {
  for_each_sequence_block(batch, seq, d, [&](std::int64_t b, std::int64_t c0, std::int64_t c1) {
    const double inv = 1.0 / static_cast<double>(seq);
    for (std::int64_t t = 0; t < seq; ++t) {
      T* dxr = dx + (b * seq + t) * lddx;
      for (std::int64_t c = c0; c < c1; ++c)
        dxr[c] = static_cast<T>(dxr[c] + static_cast<double>(ds[b * ldds + c]) * inv);
    }
  });
}

}  // namespace wiola::ops
