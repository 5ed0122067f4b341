#pragma once
// What the CUDA backend asks of the device, counted: kernel launches, matrix
// products, memsets, copies, host synchronisations (a stream sync, or a copy
// the host waits for) and stream-ordered allocations. Both runtimes (the CUDA
// one and the test tree's emulation) count the same calls, so the figures a
// GPU-less machine prints are the ones a GPU run makes (tools/gpu-counts.sh,
// docs/performance.md). Process-wide, thread-safe; read a phase as the
// difference of two snapshots.
//
// Bytes: every kernel launch declares the distinct bytes it reads and writes
// in device memory (what several blocks of it read, which the L2 cache
// serves, counts once; what two kernels of one op both read counts twice);
// memsets count what they write and device-to-device copies what they read
// and write. The floor is, per op outside the matrix products and the host
// transfers, the bytes of its operands (op_checks.hpp): every input read
// once and every output written once, an output the op adds into both read
// and written, and of a gathered table only the rows the op selects.
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
  std::int64_t kernel_bytes = 0;       // declared by the launches
  std::int64_t device_copy_bytes = 0;  // read and written by device-to-device copies
  std::int64_t floor_bytes = 0;        // the ops' operands, each once
  // Work: the matrix products' FLOPs (2mnk each), and the FLOPs of the
  // products the attention kernels run on their tiles (declared at launch,
  // kernels/attention_common.cuh: the tiles a causal mask leaves).
  std::int64_t gemm_flops = 0;
  std::int64_t attention_flops = 0;
  // What the non-GEMM work moves through device memory.
  std::int64_t non_gemm_bytes() const { return kernel_bytes + memset_bytes + device_copy_bytes; }
  // Everything the device runs in order on the stream: what a CUDA graph of
  // the phase would hold.
  std::int64_t device_operations() const { return launches + gemms + memsets + copies; }
};

DeviceCounts operator-(const DeviceCounts& after, const DeviceCounts& before);

enum class DeviceEvent : std::uint8_t {
  Launch, Gemm, Memset, Copy, DeviceCopy, HostSync, Allocation, Floor, AttentionFlops
};

// Called by the runtimes, the matrix products and the backend's op front;
// `bytes` for launches, memsets, device-to-device copies and the floor, the
// FLOPs for matrix products and attention kernels.
void count_device_event(DeviceEvent e, std::int64_t bytes = 0);
DeviceCounts device_counts();

}  // namespace wiola::cuda
