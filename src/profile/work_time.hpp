#pragma once
// A device's work priced at its ceilings: the time model of a projection
// from counts (tools/wiola-profile/counted_work.hpp) and of wiola-bench
// layers' check of it against a measured step. A GPU step runs on one
// stream, so its time is its work over each ceiling, summed: matrix products
// at the GEMM rate, attention tiles at the attention rate, the other kernels'
// bytes at the memory bandwidth, and a gap per device operation.
#include <string>

#include "backend/device_counts.hpp"

namespace wiola::profile {

// What a device reaches on each kind of work ([ceilings] in a projection spec).
struct Ceilings {
  double gemm_flops_per_s = 0;       // matrix products (cuBLASLt)
  double attention_flops_per_s = 0;  // the attention kernels' tile products
  double memory_Bps = 0;             // bytes through device memory
  double operation_s = 0;            // the gap each device operation costs
  std::string source;                // where the figures come from
};

// Work of one kind each.
struct Work {
  double gemm_flops = 0, attention_flops = 0, bytes = 0, operations = 0;
};

// The work device counters recorded, each divided by `per` (a step's mean
// over `per` steps).
Work work_of(const DeviceCounts& c, double per = 1);

// A Work's time at the ceilings, by kind.
struct WorkTime {
  double gemm_s = 0, attention_s = 0, memory_s = 0, operations_s = 0;
  double total() const { return gemm_s + attention_s + memory_s + operations_s; }
};
WorkTime time_of(const Work& w, const Ceilings& c);

}  // namespace wiola::profile
