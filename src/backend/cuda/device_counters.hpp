#pragma once
// What the CUDA backend asks of the device, counted: kernel launches, matrix
// products, memsets, copies, host synchronisations (a stream sync, or a copy
// the host waits for) and stream-ordered allocations. Both runtimes (the CUDA
// one and the test tree's emulation) count the same calls, so the figures a
// GPU-less machine prints are the ones a GPU run makes (tools/gpu-counts.sh,
// docs/performance.md). Process-wide, thread-safe; read a phase as the
// difference of two snapshots.
#include <cstdint>

namespace wiola::cuda {

struct DeviceCounts {
  std::int64_t launches = 0;     // kernels the backend launched itself
  std::int64_t gemms = 0;        // matrix products (cuBLASLt)
  std::int64_t memsets = 0;
  std::int64_t memset_bytes = 0;
  std::int64_t copies = 0;       // host to device, device to device, device to host
  std::int64_t host_syncs = 0;   // the host waited for the stream
  std::int64_t allocations = 0;  // cudaMallocAsync calls
  // Everything the device runs in order on the stream: what a CUDA graph of
  // the phase would hold.
  std::int64_t device_operations() const { return launches + gemms + memsets + copies; }
};

DeviceCounts operator-(const DeviceCounts& after, const DeviceCounts& before);

enum class DeviceEvent : std::uint8_t { Launch, Gemm, Memset, Copy, HostSync, Allocation };

// Called by the runtimes and the matrix products; `bytes` for memsets.
void count_device_event(DeviceEvent e, std::int64_t bytes = 0);
DeviceCounts device_counts();

}  // namespace wiola::cuda
