#pragma once
// An emulation of the CUDA execution model, so that the CUDA backend's kernel
// source compiles with the host compiler and runs in CI, where no GPU exists.
// Test infrastructure only (docs/testing.md says what it can and cannot show).
//
// What it provides, to the documented semantics of the CUDA programming guide:
//  * grid / block / thread indices (gridDim, blockIdx, blockDim, threadIdx) and
//    the kernel launch (WIOLA_LAUNCH in backend/cuda/cuda_compat.hpp);
//  * __shared__ memory per block, static and dynamic (WIOLA_DYNAMIC_SHARED);
//  * __syncthreads() as a barrier across the block's threads;
//  * warp shuffles (__shfl_sync, __shfl_xor_sync, __shfl_down_sync,
//    __shfl_up_sync) and votes (__ballot_sync, __any_sync, __all_sync) for
//    full warps (mask 0xffffffff);
//  * atomicAdd / atomicMax / atomicMin on global and shared memory;
//  * __threadfence() (a no-op: blocks run one after another, so every write
//    is seen by every later read; the order it enforces on a GPU, as in the
//    last-block pattern, is not tested here);
//  * the bit intrinsics __ffs and __popc;
//  * the 16-byte vector type uint4 (kernels copy aligned 16-byte chunks);
//  * dynamic shared memory above the default 48 KiB per block only after
//    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
//    bytes), up to the sm_90 limit of 227 KiB: a launch asking for more than
//    the kernel's limit fails, as on a GPU;
//  * __nv_bfloat16 with round-to-nearest-even conversions;
//  * the register-level tensor-core instructions (mma.sync m16n8k16, ldmatrix)
//    and cp.async, with the layouts the PTX ISA specifies (warp_mma.cuh).
//
// How: every thread of a block is a fiber (ucontext) on the calling OS
// thread; the blocks of a grid run one after another. A fiber runs until it
// reaches a barrier (__syncthreads, or a warp collective for its warp) or
// ends; the scheduler resumes fibers round-robin and releases a barrier once
// every thread of its group that has not exited has arrived. A barrier that
// can never be released (some threads wait at __syncthreads while others wait
// at a warp collective, or a warp collective one lane never reaches) is a
// deadlock: the launch throws, naming the kernel and the block.
//
// What it cannot show: data races (threads run one at a time between
// barriers, so a missing __syncthreads that lets one thread read a value
// another has not yet written may go unnoticed when the writer happens to run
// first), the real memory model and caches, timing, occupancy, register
// pressure, bank conflicts, the order and precision of the tensor cores'
// internal sums (the emulation adds fp32 products in k order), or blocks that
// run at the same time (they run one after another here).
// The kernel source's cuda_compat.hpp checks that this came first.
#define WIOLA_CUDA_EMU_PROVIDED 1
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

// ---- keywords -------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
// One copy per block: blocks run one at a time per OS thread, so a
// thread-local static is shared by the block's fibers and by nothing else.
#define __shared__ static thread_local

using cudaStream_t = void*;

// ---- runtime calls that kernel files make --------------------------------------
enum cudaError_t : int { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
enum cudaFuncAttribute : int { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
const char* cudaGetErrorString(cudaError_t e);

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace wiola::emu {

struct ThreadState {
  dim3 thread_idx, block_idx, block_dim, grid_dim;
  int linear = 0;  // thread index in the block (x fastest)
  int lane = 0;    // linear % 32
  int warp = 0;    // linear / 32
};

// The emulated thread now running (valid only inside a kernel).
const ThreadState& this_thread();
// __syncthreads.
void sync_block();
// Exchange for warp collectives: every lane deposits `bits`, waits for its
// warp, and gets back the deposits of all 32 lanes (missing lanes: 0).
const std::uint64_t* warp_exchange(std::uint64_t bits);
// Dynamic shared memory of the running block (the launch's byte count).
void* dynamic_shared();
// Scratch memory of the running thread's warp (mma emulation): 1024 floats.
float* warp_scratch();
// Dynamic shared memory a launch may ask for: 48 KiB unless raised for this
// kernel (`entry`: its address; null for kernels given as lambdas).
inline constexpr std::size_t kDefaultDynamicShared = 48 * 1024;
inline constexpr std::size_t kMaxDynamicShared = 227 * 1024;  // sm_90
std::size_t dynamic_shared_limit(const void* entry);
cudaError_t set_dynamic_shared_limit(const void* entry, int bytes);
// Runs `body` once per thread of every block. Throws wiola::emu::Deadlock or
// rethrows the first exception a thread raised; std::invalid_argument when the
// launch shape or its dynamic shared memory is more than the kernel may have.
void run_kernel(const char* name, dim3 grid, dim3 block, std::size_t shared_bytes,
                const std::function<void()>& body, const void* entry = nullptr);
// Kernels launched so far on this OS thread (tests count launches).
std::size_t launches();
// The stream's work -- kernels, the emulated matrix products, memsets,
// device copies -- goes through here: run at once, or, while a stream
// capture records it (runtime_emu.cpp), kept for the graph to replay.
void enqueue_device_work(std::function<void()> work);
void begin_recording();
std::vector<std::function<void()>> end_recording();
bool recording();
// What the kernels' tensor-core products ask, counted process-wide: the
// FLOPs of warp-wide products (mma_m16n8k16; tests check the device
// counters' FLOPs against them), the bytes fragments load from shared memory
// (ldmatrix), and the bytes blocks stage in shared memory for them
// (WIOLA_COUNT_SHARED_STAGING, cp_async16): together the products'
// shared-memory operand traffic (tools/gpu-counts.sh).
struct TensorCoreTraffic {
  std::int64_t mma_flops = 0, fragment_bytes = 0, staged_bytes = 0;
};
TensorCoreTraffic tensor_core_traffic();
void count_mma_flops(std::int64_t flops);
void count_fragment_bytes(std::int64_t bytes);
void count_shared_staging(std::int64_t bytes);

// The register-level PTX products (backend/cuda/kernels/warp_mma.cuh), with
// the fragment layouts PTX specifies. Warp-collective: every lane calls.
// d += a·b, m16n8k16, bf16 operands, fp32 products summed in k order.
void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                       std::uint32_t b1);
// ldmatrix.x4 (trans: .trans): `row` is this lane's row address.
void ldmatrix_x4(std::uint32_t (&r)[4], const void* row, bool trans);
// cp.async of 16 bytes (fill = false: zeros). The source is read at once; the
// destination is written only when cp_async_wait completes the copy's
// committed group, so a kernel that reads a tile before waiting sees stale
// bytes here, as it might on a GPU. Copies never waited for are dropped at
// the thread's exit (a GPU would still land them: kernels wait for all).
void cp_async16(void* dst, const void* src, bool fill);
void cp_async_commit();
void cp_async_wait(int pending);
// A block's wait for its turn after blocks of lower index (attention's
// deterministic dQ sum): those have all run here, so `seen` != `mine` means
// the kernel would wait forever: throws std::runtime_error (a deadlock).
void expect_turn(int seen, int mine);

template <class T>
std::uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}
template <class T>
T from_bits(std::uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// The object WIOLA_LAUNCH(kernel, grid, block, smem, stream)(args...) builds.
template <class Kernel>
struct Launch {
  const char* name;
  Kernel kernel;
  dim3 grid, block;
  std::size_t shared_bytes;
  template <class... Args>
  void operator()(Args&&... args) const {
    const void* entry = nullptr;
    if constexpr (std::is_pointer_v<Kernel>) entry = reinterpret_cast<const void*>(kernel);
    // Kernel parameters are values, as CUDA copies them at the launch: a
    // recorded launch keeps its own.
    enqueue_device_work([name = name, kernel = kernel, grid = grid, block = block,
                         shared_bytes = shared_bytes, entry,
                         ... values = std::decay_t<Args>(args)] {
      run_kernel(name, grid, block, shared_bytes, [&] { kernel(values...); }, entry);
    });
  }
};
template <class Kernel>
Launch<Kernel> make_launch(const char* name, Kernel k, dim3 g, dim3 b, std::size_t s) {
  return {name, k, g, b, s};
}

}  // namespace wiola::emu

#define threadIdx (::wiola::emu::this_thread().thread_idx)
#define blockIdx (::wiola::emu::this_thread().block_idx)
#define blockDim (::wiola::emu::this_thread().block_dim)
#define gridDim (::wiola::emu::this_thread().grid_dim)
constexpr int warpSize = 32;

inline void __syncthreads() { ::wiola::emu::sync_block(); }
inline void __threadfence() {}
inline void __syncwarp(unsigned = 0xffffffffu) { ::wiola::emu::warp_exchange(0); }

// ---- warp collectives (full warps) -----------------------------------------
template <class T>
T __shfl_sync(unsigned, T v, int src_lane, int width = 32) {
  const std::uint64_t* all = ::wiola::emu::warp_exchange(::wiola::emu::to_bits(v));
  const int lane = ::wiola::emu::this_thread().lane;
  const int base = lane - lane % width;
  return ::wiola::emu::from_bits<T>(all[base + ((src_lane % width) + width) % width]);
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int lane_mask, int width = 32) {
  const std::uint64_t* all = ::wiola::emu::warp_exchange(::wiola::emu::to_bits(v));
  const int lane = ::wiola::emu::this_thread().lane;
  const int base = lane - lane % width;
  const int src = base + ((lane % width) ^ lane_mask);
  return ::wiola::emu::from_bits<T>(src < base + width ? all[src] : all[lane]);
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const std::uint64_t* all = ::wiola::emu::warp_exchange(::wiola::emu::to_bits(v));
  const int lane = ::wiola::emu::this_thread().lane;
  const int in_seg = lane % width;
  const int src = in_seg + int(delta) < width ? lane + int(delta) : lane;
  return ::wiola::emu::from_bits<T>(all[src]);
}
template <class T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const std::uint64_t* all = ::wiola::emu::warp_exchange(::wiola::emu::to_bits(v));
  const int lane = ::wiola::emu::this_thread().lane;
  const int in_seg = lane % width;
  const int src = in_seg - int(delta) >= 0 ? lane - int(delta) : lane;
  return ::wiola::emu::from_bits<T>(all[src]);
}
inline unsigned __ballot_sync(unsigned, int pred) {
  const std::uint64_t* all = ::wiola::emu::warp_exchange(pred ? 1 : 0);
  unsigned bits = 0;
  for (int l = 0; l < 32; ++l)
    if (all[l] & 1) bits |= 1u << l;
  return bits;
}
inline int __any_sync(unsigned m, int pred) { return __ballot_sync(m, pred) != 0; }
inline int __all_sync(unsigned, int pred) {
  // Lanes that have exited (or do not exist) do not vote against.
  const std::uint64_t* all = ::wiola::emu::warp_exchange(pred ? 3 : 2);
  for (int l = 0; l < 32; ++l)
    if (all[l] == 2) return 0;
  return 1;
}

// ---- loads and stores that bypass L1 (coherent across blocks on a GPU) ----
template <class T>
T __ldcg(const T* p) {
  return *p;
}
template <class T>
void __stcg(T* p, T v) {
  *p = v;
}

// ---- atomics: fibers switch only at barriers, so a read-modify-write is atomic
template <class T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
template <class T>
T atomicMax(T* p, T v) {
  const T old = *p;
  if (v > old) *p = v;
  return old;
}
template <class T>
T atomicMin(T* p, T v) {
  const T old = *p;
  if (v < old) *p = v;
  return old;
}

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes):
// the most dynamic shared memory later launches of `entry` may ask for.
template <class T>
cudaError_t cudaFuncSetAttribute(T* entry, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
  return ::wiola::emu::set_dynamic_shared_limit(reinterpret_cast<const void*>(entry), value);
}

// ---- bit intrinsics -------------------------------------------------------------
// __ffs: the 1-based position of the least significant set bit, 0 for 0.
inline int __ffs(int x) { return x == 0 ? 0 : __builtin_ctz(static_cast<unsigned>(x)) + 1; }
// __popc: the number of set bits.
inline int __popc(unsigned x) { return __builtin_popcount(x); }

// ---- math intrinsics the host library lacks -----------------------------------
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0 ? 0.0f : (x > 1 ? 1.0f : x); }

// ---- bfloat16 --------------------------------------------------------------------
struct __nv_bfloat16 {
  std::uint16_t bits = 0;
};
inline __nv_bfloat16 __float2bfloat16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<std::uint16_t>((u >> 16) | 0x40)};  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return {static_cast<std::uint16_t>(u >> 16)};
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) {
  const std::uint32_t u = std::uint32_t(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

