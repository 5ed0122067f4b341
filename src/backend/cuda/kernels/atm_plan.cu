// ATM's token plan, one block per sequence. The greedy left-to-right merge
// looks sequential (a token that pairs with its successor makes the
// successor skip its own decision), but it has a closed form: with
// above[t] = rho[t] > tau, token t starts a group exactly when the run of
// consecutive above[] entries ending at t − 1 has even length. Each thread
// walks a contiguous segment of the sequence; three block scans give every
// segment the last non-merging position before it and the groups and pairs
// before it; a second walk writes the maps.
#include "backend/cuda/kernels/atm_plan.hpp"
#include "backend/cuda/kernels/common.cuh"

namespace wiola::cuda::kernels {

namespace {

constexpr int kPlanThreads = 256;

struct ScanResult {
  int before;  // the combination of the values of the threads before this one
  int total;   // ... of every thread's value
};

// Hillis–Steele scan over the block (every thread calls it).
template <class Combine>
__device__ ScanResult block_scan(int v, int identity, int* buf, Combine combine) {
  const int tid = threadIdx.x;
  buf[tid] = v;
  __syncthreads();
  for (int offset = 1; offset < kPlanThreads; offset *= 2) {
    const int other = tid >= offset ? buf[tid - offset] : identity;
    __syncthreads();
    buf[tid] = combine(buf[tid], other);
    __syncthreads();
  }
  const ScanResult r{tid > 0 ? buf[tid - 1] : identity, buf[kPlanThreads - 1]};
  __syncthreads();  // buf is reused by the next scan
  return r;
}

struct Maps {
  std::int32_t *n_queries, *groups, *key_prefix, *key_extra, *ctx_row, *pos_q, *pos_kv, *merge_a,
      *merge_b, *unmerge;
};

__global__ void atm_plan_kernel(int seq, const float* rho, std::int64_t ldr, double tau,
                                bool paper, bool causal_summary, Maps m) {
  __shared__ int buf[kPlanThreads];
  const int b = blockIdx.x;
  const std::int32_t base = b * seq;
  const int per_thread = (seq + kPlanThreads - 1) / kPlanThreads;
  const int first = static_cast<int>(threadIdx.x) * per_thread;
  const int lo = first < seq ? first : seq;
  const int hi = lo + per_thread < seq ? lo + per_thread : seq;
  const auto above = [&](int t) {
    return t + 1 < seq && static_cast<double>(rho[(std::int64_t(base) + t) * ldr]) > tau;
  };

  // The last position before the segment that does not merge with its successor.
  int last_below = -1;
  for (int t = lo; t < hi; ++t)
    if (!above(t)) last_below = t;
  const int below_before =
      block_scan(last_below, -1, buf, [](int x, int y) { return x > y ? x : y; }).before;

  // Group starts and pairs in the segment.
  int starts = 0, pairs = 0;
  for (int t = lo, below = below_before; t < hi; ++t) {
    const bool start = (t - 1 - below) % 2 == 0;
    starts += start;
    pairs += start && above(t);
    if (!above(t)) below = t;
  }
  const auto plus = [](int x, int y) { return x + y; };
  const ScanResult g = block_scan(starts, 0, buf, plus);
  const ScanResult p = block_scan(pairs, 0, buf, plus);
  const int groups = g.total;

  int group = g.before - 1, pair = p.before;
  for (int t = lo, below = below_before; t < hi; ++t) {
    const bool start = (t - 1 - below) % 2 == 0;
    const bool pairs_next = start && above(t);
    if (!above(t)) below = t;
    group += start;
    const std::int32_t i = base + t;
    const std::int32_t ctx = causal_summary ? base + t : b;
    m.key_extra[i] = -1;
    if (paper) {
      m.unmerge[i] = base + group;
      if (t >= groups) {  // past the merged rows: the empty plan's values
        m.merge_a[i] = m.merge_b[i] = -1;
        m.key_prefix[i] = m.pos_q[i] = m.pos_kv[i] = m.ctx_row[i] = 0;
      }
      if (start) {
        const std::int32_t k = base + group;
        m.merge_a[k] = i;
        m.merge_b[k] = pairs_next ? i + 1 : -1;
        m.key_prefix[k] = group + 1;
        m.pos_q[k] = m.pos_kv[k] = t;
        m.ctx_row[k] = ctx;
      }
      continue;
    }
    // Causal: key/value rows are the groups, then the pairs' first members.
    m.pos_q[i] = t;
    m.ctx_row[i] = ctx;
    m.key_prefix[i] = pairs_next ? group : group + 1;
    if (start) {
      const std::int32_t k = base + group;
      m.merge_a[k] = i;
      m.merge_b[k] = pairs_next ? i + 1 : -1;
      m.pos_kv[k] = t;
    }
    if (pairs_next) {
      const std::int32_t e = base + groups + pair++;
      m.merge_a[e] = i;
      m.merge_b[e] = -1;
      m.pos_kv[e] = t;
      m.key_extra[i] = e - base;
    }
  }
  if (threadIdx.x == 0) {
    m.groups[b] = groups;
    m.n_queries[b] = paper ? groups : seq;
  }
}

std::int32_t* ints(const Tensor& t) { return static_cast<std::int32_t*>(t.data()); }

}  // namespace

void atm_plan(const Tensor& rho, int batch, int seq, double tau, bool paper, bool causal_summary,
              const TokenPlanTensors& plan, Stream s) {
  if (batch == 0) return;
  const Maps m{ints(plan.index.n_queries), ints(plan.groups),       ints(plan.index.key_prefix),
               ints(plan.index.key_extra), ints(plan.index.ctx_row), ints(plan.pos_q),
               ints(plan.pos_kv),          ints(plan.merge_a),       ints(plan.merge_b),
               paper ? ints(plan.unmerge) : nullptr};
  WIOLA_LAUNCH(atm_plan_kernel, dim3(static_cast<unsigned>(batch)), dim3(kPlanThreads), 0,
               static_cast<cudaStream_t>(s))(seq, static_cast<const float*>(rho.data()), rho.ld(),
                                              tau, paper, causal_summary, m);
  // rho read (each walk reads it again, from the L1 cache); ten maps written.
  const std::int64_t n = std::int64_t(batch) * seq, i32 = sizeof(std::int32_t);
  WIOLA_CHECK_LAUNCH("atm_plan_kernel", bytes_of(rho) + (9 * n + 2 * batch) * i32);
}

}  // namespace wiola::cuda::kernels
