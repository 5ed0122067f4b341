// Host stand-ins for the CUDA runtime calls of backend/cuda/runtime.hpp:
// "device" memory is host memory, streams are in-order by construction (the
// emulated kernels run to completion at their launch), copies are memcpy.
// A stream capture records the stream's work (emu::enqueue_device_work) and
// a graph launch runs the record.
// Each call is counted as runtime_cuda.cpp counts it (device_counters.hpp).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

#include "backend/cuda/device_counters.hpp"
#include "backend/cuda/runtime.hpp"
#include "core/alignment.hpp"
#include "core/error.hpp"
#include "cuda_emu.hpp"
#include "runtime_emu.hpp"

namespace wiola::cuda {

namespace {
// What the emulated device holds, for emu_set_memory_limit.
std::mutex live_mutex;
std::unordered_map<void*, std::size_t> live;
std::size_t live_bytes = 0;
std::size_t memory_limit = 0;  // 0: the host's memory

void refuse_during_capture(const char* call) {
  require(!emu::recording(), "emulated CUDA: ", call,
          " during a stream capture (CUDA refuses it: cudaErrorStreamCaptureUnsupported)");
}

// An instantiated graph: the recorded work, in stream order.
struct EmulatedGraph {
  std::vector<std::function<void()>> work;
};
}  // namespace

void begin_capture(Stream) { emu::begin_recording(); }
Graph end_capture(Stream) { return new EmulatedGraph{emu::end_recording()}; }
void abandon_capture(Stream) {
  if (emu::recording()) (void)emu::end_recording();
}
void launch_graph(Graph g, Stream) {
  refuse_during_capture("a graph launch");  // allowed by CUDA, never needed here
  count_device_event(DeviceEvent::GraphLaunch);
  for (const auto& work : static_cast<EmulatedGraph*>(g)->work) work();
}
void destroy_graph(Graph g) { delete static_cast<EmulatedGraph*>(g); }

int device_count() { return 1; }
std::string no_device_reason() { return ""; }
void set_device(int index) {
  require(index == 0, "the emulated CUDA runtime has one device, asked for ", index);
}
int current_device() { return 0; }

DeviceProperties device_properties(int index) {
  require(index == 0, "the emulated CUDA runtime has one device, asked for ", index);
  DeviceProperties p;
  p.name = "emulated CUDA device (host fibers)";
  p.major = 9;
  p.minor = 0;
  p.memory_bytes = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) *
                   static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
  p.multiprocessors = 1;
  p.uuid = "GPU-emulated-0";
  return p;
}

Stream create_stream() {
  static int token = 0;
  return &token;
}
void destroy_stream(Stream) {}
void synchronize(Stream) {
  refuse_during_capture("a stream synchronisation");
  count_device_event(DeviceEvent::HostSync);
}


void emu_set_memory_limit(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(live_mutex);
  memory_limit = bytes;
}

std::size_t emu_memory_in_use() {
  std::lock_guard<std::mutex> lock(live_mutex);
  return live_bytes;
}

namespace {
void* host_block(std::size_t bytes) {
  count_device_event(DeviceEvent::Allocation);
  // As cudaMallocAsync: 256-byte aligned, what cuBLASLt assumes (core/alignment.hpp).
  const auto step = static_cast<std::size_t>(kOperandAlignBytes);
  const std::size_t whole = std::max(step, (bytes + step - 1) / step * step);
  std::lock_guard<std::mutex> lock(live_mutex);
  if (memory_limit && live_bytes + whole > memory_limit) return nullptr;
  void* p = std::aligned_alloc(step, whole);
  if (!p) return nullptr;
  std::memset(p, 0xA5, bytes);  // device memory is not zeroed
  live.emplace(p, whole);
  live_bytes += whole;
  return p;
}
}  // namespace

void* try_allocate(std::size_t bytes, Stream) {
  refuse_during_capture("a stream-ordered allocation");
  return host_block(bytes);
}
void* allocate_graph_memory(std::size_t bytes, const char* what) {
  void* p = host_block(bytes);
  require(p != nullptr, "emulated CUDA: out of memory allocating ", bytes,
          " bytes of graph memory for ", what);
  return p;
}
void* allocate(std::size_t bytes, Stream s, const char* what) {
  void* p = try_allocate(bytes, s);
  require(p != nullptr, "emulated CUDA: out of memory allocating ", bytes, " bytes for ", what);
  return p;
}
void release_graph_memory(void* p) { release(p, nullptr); }
void release(void* p, Stream) {
  if (!p) return;
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    const auto it = live.find(p);
    if (it != live.end()) {
      live_bytes -= it->second;
      live.erase(it);
    }
  }
  std::free(p);
}
void reserve_pool(std::size_t, Stream) {}  // host memory: nothing to set aside
void memset_zero(void* p, std::size_t bytes, Stream s) { memset_bytes(p, 0, bytes, s); }
void memset_bytes(void* p, int value, std::size_t bytes, Stream) {
  if (!bytes) return;
  count_device_event(DeviceEvent::Memset, static_cast<std::int64_t>(bytes));
  emu::enqueue_device_work([=] { std::memset(p, value, bytes); });
}
void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s) {
  if (!bytes) return;
  refuse_during_capture("a copy to host memory");
  count_device_event(DeviceEvent::Copy);
  std::memcpy(dst, src, bytes);
  synchronize(s);  // as the CUDA runtime: the host waits before it reads
}
void copy_to_device(void* dst, const void* src, std::size_t bytes, Stream) {
  if (!bytes) return;
  refuse_during_capture("a copy from pageable host memory");
  count_device_event(DeviceEvent::Copy);
  std::memcpy(dst, src, bytes);
}
void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream) {
  if (!bytes) return;
  count_device_event(DeviceEvent::DeviceCopy, 2 * static_cast<std::int64_t>(bytes));
  emu::enqueue_device_work([=] { std::memmove(dst, src, bytes); });
}
void check_launch(const char*, std::int64_t bytes, const char*, int) {
  count_device_event(DeviceEvent::Launch, bytes);
}

void memory_info(std::size_t& free_bytes, std::size_t& total_bytes) {
  total_bytes = device_properties(0).memory_bytes;
  free_bytes = static_cast<std::size_t>(sysconf(_SC_AVPHYS_PAGES)) *
               static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
}

}  // namespace wiola::cuda
