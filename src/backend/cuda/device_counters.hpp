#pragma once
// What the CUDA backend asks of the device, counted: kernel launches, matrix
// products, memsets, copies, host synchronisations (a stream sync, or a copy
// the host waits for), stream-ordered allocations and CUDA graph launches
// (the work a graph replays is counted once, when it is captured). Both runtimes (the CUDA
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

#include "backend/device_counts.hpp"

namespace wiola::cuda {

// The counts' type is the backend interface's (Backend::device_counts()).
using wiola::DeviceCounts;

enum class DeviceEvent : std::uint8_t {
  Launch, Gemm, Memset, Copy, DeviceCopy, HostSync, Allocation, Floor, AttentionFlops,
  GraphLaunch
};

// Called by the runtimes, the matrix products and the backend's op front;
// `bytes` for launches, memsets, device-to-device copies and the floor, the
// FLOPs for matrix products and attention kernels.
void count_device_event(DeviceEvent e, std::int64_t bytes = 0);
DeviceCounts device_counts();

}  // namespace wiola::cuda
