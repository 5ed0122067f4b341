#pragma once
// What a device backend asked of its device, counted (Backend::device_counts;
// the CUDA backend's counters, backend/cuda/device_counters.hpp, say how
// each figure is made). A phase is the difference of two snapshots.
#include <cstdint>
#include <string>

namespace wiola {

struct DeviceCounts {
  std::int64_t launches = 0;     // kernels the backend launched itself
  std::int64_t gemms = 0;        // matrix products (cuBLASLt on CUDA)
  std::int64_t memsets = 0;
  std::int64_t memset_bytes = 0;
  std::int64_t copies = 0;       // host to device, device to device, device to host
  std::int64_t host_syncs = 0;   // the host waited for the stream
  std::int64_t allocations = 0;  // stream-ordered allocations (cudaMallocAsync)
  std::int64_t kernel_bytes = 0;       // declared by the launches
  std::int64_t device_copy_bytes = 0;  // read and written by device-to-device copies
  std::int64_t floor_bytes = 0;        // the ops' operands, each once
  // Work: the matrix products' FLOPs (2mnk each), and the FLOPs of the
  // products the attention kernels run on their tiles (declared at launch,
  // backend/cuda/kernels/attention_common.cuh: the tiles a causal mask
  // leaves).
  std::int64_t gemm_flops = 0;
  std::int64_t attention_flops = 0;
  // CUDA graphs launched: each replays work counted when it was captured.
  std::int64_t graph_launches = 0;
  // What the non-GEMM work moves through device memory.
  std::int64_t non_gemm_bytes() const { return kernel_bytes + memset_bytes + device_copy_bytes; }
  // Everything the device runs in order on the stream: what a CUDA graph of
  // the phase would hold.
  std::int64_t device_operations() const { return launches + gemms + memsets + copies; }
  // The non-GEMM bytes over their floor (0 when there is no floor).
  double floor_ratio() const {
    return floor_bytes > 0 ? double(non_gemm_bytes()) / double(floor_bytes) : 0.0;
  }
};

DeviceCounts operator-(const DeviceCounts& after, const DeviceCounts& before);
DeviceCounts operator+(const DeviceCounts& a, const DeviceCounts& b);

// One line of the counts, for `per` (each count divided by it: 1 for a
// phase, the step count for a step's mean): launches (GEMMs, kernels),
// memsets, copies, host syncs, allocations, the non-GEMM bytes against their
// floor, and the products' and the attention tiles' FLOPs.
std::string describe_counts(const DeviceCounts& c, double per = 1);

}  // namespace wiola
