// The fiber scheduler behind cuda_emu.hpp: one ucontext per emulated thread,
// the blocks of a grid one after another, barriers released when every
// thread of their group that has not exited has arrived.
#include <atomic>
#include "cuda_emu.hpp"

#include "fiber_context.hpp"


#include <array>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define WIOLA_EMU_ASAN 1
#endif

namespace wiola::emu {

namespace {

constexpr std::size_t kStackBytes = 256 * 1024;  // kernels keep small arrays on the stack

enum class Wait : std::uint8_t { None, Block, Warp };

struct Fiber {
  ThreadState state;
  FiberContext context;
  char* stack = nullptr;  // from the OS thread's stack pool
  bool done = false;
  Wait waiting = Wait::None;
  std::uint64_t generation = 0;  // of the barrier it waits at
  void* asan_fake_stack = nullptr;
  // cp.async copies not yet written to shared memory, and the number of them
  // in each committed group, oldest first.
  struct PendingCopy {
    void* dst;
    std::array<std::byte, 16> bytes;
  };
  std::vector<PendingCopy> pending;
  std::vector<std::size_t> committed;
};

struct WarpState {
  std::uint64_t generation = 0;
  int arrived = 0;
  std::array<std::array<std::uint64_t, 32>, 2> slots{};  // double-buffered by generation
  std::array<bool, 32> present{};
  std::array<float, 1024> scratch{};
};

// Everything of the launch in flight on this OS thread.
struct LaunchState {
  const char* name = "";
  const std::function<void()>* body = nullptr;
  std::vector<Fiber> fibers;
  std::vector<WarpState> warps;
  std::vector<std::byte> dynamic_shared;
  FiberContext scheduler;
  int current = -1;
  int live = 0;  // fibers not done
  std::uint64_t block_generation = 0;
  int block_arrived = 0;
  std::exception_ptr error;
#ifdef WIOLA_EMU_ASAN
  void* scheduler_fake_stack = nullptr;
  const void* scheduler_stack = nullptr;
  std::size_t scheduler_stack_size = 0;
#endif
};

// Per-kernel dynamic shared memory limits (cudaFuncSetAttribute), process-wide
// like the attribute on a device.
std::mutex g_limits_mutex;
std::map<const void*, std::size_t>& shared_limits() {
  static std::map<const void*, std::size_t> limits;
  return limits;
}

thread_local LaunchState* g_launch = nullptr;

// Fiber stacks, kept for the next launch on this OS thread: a launch of 1024
// threads would otherwise map and unmap 256 MiB every time.
thread_local std::vector<std::unique_ptr<char[]>> g_stacks;

char* stack_for(std::size_t fiber) {
  while (g_stacks.size() <= fiber) g_stacks.push_back(std::make_unique<char[]>(kStackBytes));
  return g_stacks[fiber].get();
}
thread_local std::size_t g_launches = 0;

LaunchState& launch() {
  if (!g_launch) throw std::logic_error("cuda emulation: a device function ran outside a kernel");
  return *g_launch;
}

Fiber& current_fiber() {
  LaunchState& l = launch();
  return l.fibers[static_cast<std::size_t>(l.current)];
}

// Back to the scheduler; returns when the scheduler resumes this fiber.
void yield_to_scheduler() {
  LaunchState& l = launch();
  Fiber& f = current_fiber();
#ifdef WIOLA_EMU_ASAN
  __sanitizer_start_switch_fiber(&f.asan_fake_stack, l.scheduler_stack, l.scheduler_stack_size);
#endif
  switch_fiber(f.context, l.scheduler);
#ifdef WIOLA_EMU_ASAN
  __sanitizer_finish_switch_fiber(f.asan_fake_stack, nullptr, nullptr);
#endif
}

void fiber_main() {
  LaunchState& l = launch();
#ifdef WIOLA_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &l.scheduler_stack, &l.scheduler_stack_size);
#endif
  try {
    (*l.body)();
  } catch (...) {
    if (!l.error) l.error = std::current_exception();
  }
  Fiber& f = current_fiber();
  f.done = true;
  --l.live;
#ifdef WIOLA_EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, l.scheduler_stack, l.scheduler_stack_size);
#endif
  switch_fiber(f.context, l.scheduler);  // never resumed: the fiber is done
}

// Releases the block barrier when every live fiber has arrived.
void try_release_block(LaunchState& l) {
  if (l.block_arrived == 0 || l.block_arrived < l.live) return;
  for (Fiber& f : l.fibers)
    if (!f.done && f.waiting == Wait::Block) f.waiting = Wait::None;
  l.block_arrived = 0;
  ++l.block_generation;
}

// Releases warp w's barrier when every live lane of it has arrived.
void try_release_warp(LaunchState& l, int w) {
  WarpState& ws = l.warps[static_cast<std::size_t>(w)];
  if (ws.arrived == 0) return;
  int live_lanes = 0;
  for (Fiber& f : l.fibers)
    if (f.state.warp == w && !f.done) ++live_lanes;
  if (ws.arrived < live_lanes) return;
  for (Fiber& f : l.fibers)
    if (f.state.warp == w && !f.done && f.waiting == Wait::Warp) f.waiting = Wait::None;
  ws.arrived = 0;
  ws.present.fill(false);
  ++ws.generation;
}

std::string block_name(const dim3& b) {
  std::ostringstream os;
  os << "(" << b.x << "," << b.y << "," << b.z << ")";
  return os.str();
}

void run_block(LaunchState& l, dim3 grid, dim3 block, dim3 block_idx) {
  const int n = static_cast<int>(block.x * block.y * block.z);
  l.live = n;
  l.block_arrived = 0;
  for (WarpState& w : l.warps) {
    w.arrived = 0;
    w.present.fill(false);
  }
  std::fill(l.dynamic_shared.begin(), l.dynamic_shared.end(), std::byte{0xA5});  // not zeroed on a GPU
  for (int i = 0; i < n; ++i) {
    Fiber& f = l.fibers[static_cast<std::size_t>(i)];
    f.state.thread_idx = dim3(i % block.x, (i / block.x) % block.y, i / (block.x * block.y));
    f.state.block_idx = block_idx;
    f.state.block_dim = block;
    f.state.grid_dim = grid;
    f.state.linear = i;
    f.state.lane = i % 32;
    f.state.warp = i / 32;
    f.done = false;
    f.waiting = Wait::None;
    f.pending.clear();
    f.committed.clear();
    prepare_fiber(f.context, f.stack, kStackBytes, fiber_main);
  }
  while (l.live > 0) {
    bool ran = false;
    for (int i = 0; i < n; ++i) {
      Fiber& f = l.fibers[static_cast<std::size_t>(i)];
      if (f.done || f.waiting != Wait::None) continue;
      l.current = i;
#ifdef WIOLA_EMU_ASAN
      __sanitizer_start_switch_fiber(&l.scheduler_fake_stack, f.stack, kStackBytes);
#endif
      switch_fiber(l.scheduler, f.context);
#ifdef WIOLA_EMU_ASAN
      __sanitizer_finish_switch_fiber(l.scheduler_fake_stack, nullptr, nullptr);
#endif
      l.current = -1;
      ran = true;
      if (l.error) break;
      // A thread that exits may complete a barrier the others wait at.
      if (f.done) {
        try_release_block(l);
        try_release_warp(l, f.state.warp);
      }
    }
    if (l.error) break;
    if (!ran) {
      std::string where;
      for (const Fiber& f : l.fibers)
        if (!f.done && f.waiting != Wait::None) {
          where = f.waiting == Wait::Block ? "__syncthreads" : "a warp collective";
          break;
        }
      std::ostringstream os;
      os << "cuda emulation: deadlock in kernel " << l.name << ", block " << block_name(block_idx)
         << ": threads wait at " << where << " that the other threads of their group never reach";
      throw std::runtime_error(os.str());
    }
  }
}

}  // namespace

const ThreadState& this_thread() { return current_fiber().state; }

void sync_block() {
  LaunchState& l = launch();
  Fiber& f = current_fiber();
  f.waiting = Wait::Block;
  f.generation = l.block_generation;
  ++l.block_arrived;
  try_release_block(l);
  if (f.waiting != Wait::None) yield_to_scheduler();
}

const std::uint64_t* warp_exchange(std::uint64_t bits) {
  LaunchState& l = launch();
  Fiber& f = current_fiber();
  WarpState& w = l.warps[static_cast<std::size_t>(f.state.warp)];
  const std::uint64_t gen = w.generation;
  auto& slots = w.slots[gen % 2];
  if (w.arrived == 0) slots.fill(0);
  slots[static_cast<std::size_t>(f.state.lane)] = bits;
  w.present[static_cast<std::size_t>(f.state.lane)] = true;
  f.waiting = Wait::Warp;
  f.generation = gen;
  ++w.arrived;
  try_release_warp(l, f.state.warp);
  if (f.waiting != Wait::None) yield_to_scheduler();
  // Released: the slots of this generation stay intact until every lane has
  // passed the next warp barrier, by which time all have read them.
  return w.slots[gen % 2].data();
}

void* dynamic_shared() { return launch().dynamic_shared.data(); }

std::size_t dynamic_shared_limit(const void* entry) {
  if (!entry) return kDefaultDynamicShared;
  const std::lock_guard<std::mutex> lock(g_limits_mutex);
  const auto it = shared_limits().find(entry);
  return it == shared_limits().end() ? kDefaultDynamicShared : it->second;
}

cudaError_t set_dynamic_shared_limit(const void* entry, int bytes) {
  if (!entry || bytes < 0 || std::size_t(bytes) > kMaxDynamicShared) return cudaErrorInvalidValue;
  const std::lock_guard<std::mutex> lock(g_limits_mutex);
  shared_limits()[entry] = std::size_t(bytes);
  return cudaSuccess;
}

float* warp_scratch() {
  return launch().warps[static_cast<std::size_t>(current_fiber().state.warp)].scratch.data();
}

void run_kernel(const char* name, dim3 grid, dim3 block, std::size_t shared_bytes,
                const std::function<void()>& body, const void* entry) {
  if (g_launch) throw std::logic_error("cuda emulation: a kernel launched from inside a kernel");
  const std::size_t threads = std::size_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024)
  {
    std::ostringstream os;
    os << "cuda emulation: kernel " << name << " launched with " << threads
       << " threads per block (1..1024)";
    throw std::invalid_argument(os.str());
  }
  if (shared_bytes > dynamic_shared_limit(entry)) {
    std::ostringstream os;
    os << "cuda emulation: kernel " << name << " launched with " << shared_bytes
       << " bytes of dynamic shared memory, more than its limit of "
       << dynamic_shared_limit(entry)
       << " (raise it with cudaFuncSetAttribute(kernel, "
          "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes))";
    throw std::invalid_argument(os.str());
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;  // an empty grid launches nothing
  auto l = std::make_unique<LaunchState>();
  l->name = name;
  l->body = &body;
  l->fibers.resize(threads);
  for (std::size_t i = 0; i < threads; ++i) l->fibers[i].stack = stack_for(i);
  l->warps.resize((threads + 31) / 32);
  l->dynamic_shared.resize(shared_bytes);
  g_launch = l.get();
  ++g_launches;
  struct Reset {
    ~Reset() { g_launch = nullptr; }
  } reset;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        run_block(*l, grid, block, dim3(x, y, z));
        if (l->error) std::rethrow_exception(l->error);
      }
}

std::size_t launches() { return g_launches; }

namespace {
// The capture under way, if any (one at a time, as the backend has one stream).
std::optional<std::vector<std::function<void()>>> g_recording;
std::mutex g_recording_mutex;
}  // namespace

void enqueue_device_work(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(g_recording_mutex);
    if (g_recording) {
      g_recording->push_back(std::move(work));
      return;
    }
  }
  work();
}

void begin_recording() {
  std::lock_guard<std::mutex> lock(g_recording_mutex);
  if (g_recording) throw std::logic_error("cuda emulation: a stream capture is already under way");
  g_recording.emplace();
}

std::vector<std::function<void()>> end_recording() {
  std::lock_guard<std::mutex> lock(g_recording_mutex);
  if (!g_recording) throw std::logic_error("cuda emulation: no stream capture is under way");
  std::vector<std::function<void()>> work = std::move(*g_recording);
  g_recording.reset();
  return work;
}

bool recording() {
  std::lock_guard<std::mutex> lock(g_recording_mutex);
  return g_recording.has_value();
}

namespace {
std::atomic<std::int64_t> g_mma_flops{0}, g_fragment_bytes{0}, g_staged_bytes{0};
}  // namespace
TensorCoreTraffic tensor_core_traffic() {
  return {g_mma_flops.load(), g_fragment_bytes.load(), g_staged_bytes.load()};
}
void count_mma_flops(std::int64_t flops) {
  g_mma_flops.fetch_add(flops, std::memory_order_relaxed);
}
void count_fragment_bytes(std::int64_t bytes) {
  g_fragment_bytes.fetch_add(bytes, std::memory_order_relaxed);
}
void count_shared_staging(std::int64_t bytes) {
  g_staged_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

// ---- register-level products (PTX layouts; cuda_emu.hpp) ----------------------

namespace {
float bf16_half(std::uint32_t r, int hi) {
  const std::uint32_t bits = (hi ? r >> 16 : r & 0xffffu) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
std::uint32_t pack_halves(std::uint16_t lo, std::uint16_t hi) {
  return std::uint32_t(lo) | (std::uint32_t(hi) << 16);
}
}  // namespace

void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                       std::uint32_t b1) {
  float* A = warp_scratch();  // [16][16]
  float* B = A + 256;         // [16][8], k-major
  const int lane = this_thread().lane, g = lane / 4, t = lane % 4;
  if (lane == 0) count_mma_flops(2 * 16 * 8 * 16);
  for (int h = 0; h < 2; ++h) {
    A[g * 16 + 2 * t + h] = bf16_half(a[0], h);
    A[(g + 8) * 16 + 2 * t + h] = bf16_half(a[1], h);
    A[g * 16 + 2 * t + 8 + h] = bf16_half(a[2], h);
    A[(g + 8) * 16 + 2 * t + 8 + h] = bf16_half(a[3], h);
    B[(2 * t + h) * 8 + g] = bf16_half(b0, h);
    B[(2 * t + 8 + h) * 8 + g] = bf16_half(b1, h);
  }
  warp_exchange(0);
  float out[4];
  for (int e = 0; e < 4; ++e) {
    const int r = e < 2 ? g : g + 8, c = 2 * t + e % 2;
    float acc = d[e];
    for (int k = 0; k < 16; ++k) acc += A[r * 16 + k] * B[k * 8 + c];
    out[e] = acc;
  }
  warp_exchange(0);  // everyone has read the scratch
  for (int e = 0; e < 4; ++e) d[e] = out[e];
}

void ldmatrix_x4(std::uint32_t (&r)[4], const void* row, bool trans) {
  const int lane = this_thread().lane, g = lane / 4, t = lane % 4;
  if (lane == 0) count_fragment_bytes(4 * 8 * 8 * 2);
  const std::uint64_t* rows = warp_exchange(reinterpret_cast<std::uintptr_t>(row));
  const auto at = [&](int m, int i, int j) {  // element [i][j] of matrix m
    std::uint16_t v;
    std::memcpy(&v, reinterpret_cast<const std::byte*>(rows[8 * m + i]) + 2 * j, 2);
    return v;
  };
  for (int m = 0; m < 4; ++m)
    r[m] = trans ? pack_halves(at(m, 2 * t, g), at(m, 2 * t + 1, g))
                 : pack_halves(at(m, g, 2 * t), at(m, g, 2 * t + 1));
  warp_exchange(0);  // the addresses stay until every lane has read them
}

void expect_turn(int seen, int mine) {
  if (seen == mine) return;
  std::ostringstream os;
  os << "cuda emulation: deadlock in kernel " << launch().name << ": a block waits for turn "
     << mine << " of a counter at " << seen
     << ", which only a block that runs later could pass";
  throw std::runtime_error(os.str());
}

void cp_async16(void* dst, const void* src, bool fill) {
  Fiber::PendingCopy c{dst, {}};
  if (fill) std::memcpy(c.bytes.data(), src, 16);
  current_fiber().pending.push_back(c);
  count_shared_staging(16);
}

void cp_async_commit() {
  Fiber& f = current_fiber();
  std::size_t before = 0;
  for (std::size_t n : f.committed) before += n;
  f.committed.push_back(f.pending.size() - before);
}

void cp_async_wait(int pending) {
  Fiber& f = current_fiber();
  while (f.committed.size() > static_cast<std::size_t>(pending)) {
    const std::size_t n = f.committed.front();
    for (std::size_t i = 0; i < n; ++i)
      std::memcpy(f.pending[i].dst, f.pending[i].bytes.data(), 16);
    f.pending.erase(f.pending.begin(), f.pending.begin() + static_cast<std::ptrdiff_t>(n));
    f.committed.erase(f.committed.begin());
  }
}

}  // namespace wiola::emu

const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "invalid argument";
}
