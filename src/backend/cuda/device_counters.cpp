#include "backend/cuda/device_counters.hpp"

#include <atomic>

namespace wiola::cuda {

namespace {

struct Atomics {
  std::atomic<std::int64_t> launches{0}, gemms{0}, memsets{0}, memset_bytes{0}, copies{0},
      host_syncs{0}, allocations{0}, kernel_bytes{0}, device_copy_bytes{0}, floor_bytes{0},
      gemm_flops{0}, attention_flops{0}, graph_launches{0};
};

Atomics& atomics() {
  static Atomics a;
  return a;
}

}  // namespace

void count_device_event(DeviceEvent e, std::int64_t bytes) {
  Atomics& a = atomics();
  constexpr auto relaxed = std::memory_order_relaxed;
  switch (e) {
    case DeviceEvent::Launch:
      a.launches.fetch_add(1, relaxed);
      a.kernel_bytes.fetch_add(bytes, relaxed);
      break;
    case DeviceEvent::Gemm:
      a.gemms.fetch_add(1, relaxed);
      a.gemm_flops.fetch_add(bytes, relaxed);
      break;
    case DeviceEvent::AttentionFlops: a.attention_flops.fetch_add(bytes, relaxed); break;
    case DeviceEvent::Memset:
      a.memsets.fetch_add(1, relaxed);
      a.memset_bytes.fetch_add(bytes, relaxed);
      break;
    case DeviceEvent::Copy: a.copies.fetch_add(1, relaxed); break;
    case DeviceEvent::DeviceCopy:
      a.copies.fetch_add(1, relaxed);
      a.device_copy_bytes.fetch_add(bytes, relaxed);
      break;
    case DeviceEvent::Floor: a.floor_bytes.fetch_add(bytes, relaxed); break;
    case DeviceEvent::HostSync: a.host_syncs.fetch_add(1, relaxed); break;
    case DeviceEvent::Allocation: a.allocations.fetch_add(1, relaxed); break;
    case DeviceEvent::GraphLaunch: a.graph_launches.fetch_add(1, relaxed); break;
  }
}

DeviceCounts device_counts() {
  const Atomics& a = atomics();
  DeviceCounts c;
  c.launches = a.launches.load();
  c.gemms = a.gemms.load();
  c.memsets = a.memsets.load();
  c.memset_bytes = a.memset_bytes.load();
  c.copies = a.copies.load();
  c.host_syncs = a.host_syncs.load();
  c.allocations = a.allocations.load();
  c.kernel_bytes = a.kernel_bytes.load();
  c.device_copy_bytes = a.device_copy_bytes.load();
  c.floor_bytes = a.floor_bytes.load();
  c.gemm_flops = a.gemm_flops.load();
  c.attention_flops = a.attention_flops.load();
  c.graph_launches = a.graph_launches.load();
  return c;
}

}  // namespace wiola::cuda
