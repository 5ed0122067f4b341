// The CUDA runtime behind backend/cuda/runtime.hpp.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "backend/cuda/runtime.hpp"

#include "backend/cuda/device_counters.hpp"
#include "core/error.hpp"
#include "core/alignment.hpp"
#include "core/process_identity.hpp"

namespace wiola::cuda {

namespace {

[[noreturn]] void fail_call(cudaError_t rc, const char* call, const char* file, int line) {
  fail("CUDA error in ", call, " at ", file, ":", line, " on ", process_identity().describe(),
       ": ", cudaGetErrorName(rc), ": ", cudaGetErrorString(rc));
}

#define WIOLA_CUDA(call)                                               \
  do {                                                                 \
    const cudaError_t wiola_rc = (call);                               \
    if (wiola_rc != cudaSuccess) fail_call(wiola_rc, #call, __FILE__, __LINE__); \
  } while (0)

cudaStream_t as_stream(Stream s) { return static_cast<cudaStream_t>(s); }

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string no_device_reason() {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  cudaGetLastError();
  if (rc != cudaSuccess) return std::string(cudaGetErrorString(rc));
  return n == 0 ? "no CUDA device is visible" : "";
}

void set_device(int index) { WIOLA_CUDA(cudaSetDevice(index)); }

int current_device() {
  int d = 0;
  WIOLA_CUDA(cudaGetDevice(&d));
  return d;
}

DeviceProperties device_properties(int index) {
  cudaDeviceProp p{};
  WIOLA_CUDA(cudaGetDeviceProperties(&p, index));
  DeviceProperties out;
  out.name = p.name;
  out.major = p.major;
  out.minor = p.minor;
  out.memory_bytes = p.totalGlobalMem;
  out.multiprocessors = p.multiProcessorCount;
  char uuid[48];
  const auto* b = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  std::snprintf(uuid, sizeof uuid,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  out.uuid = uuid;
  return out;
}

Stream create_stream() {
  cudaStream_t s = nullptr;
  WIOLA_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

void destroy_stream(Stream s) {
  if (s) cudaStreamDestroy(as_stream(s));  // on the way out: nothing left to report to
}

void synchronize(Stream s) {
  count_device_event(DeviceEvent::HostSync);
  WIOLA_CUDA(cudaStreamSynchronize(as_stream(s)));
}

void* try_allocate(std::size_t bytes, Stream s) {
  count_device_event(DeviceEvent::Allocation);
  void* p = nullptr;
  const cudaError_t rc = cudaMallocAsync(&p, bytes, as_stream(s));
  if (rc == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it, the caller decides
    return nullptr;
  }
  if (rc != cudaSuccess) fail_call(rc, "cudaMallocAsync", __FILE__, __LINE__);
  // Every operand carved from an allocation relies on its start being aligned
  // as cuBLASLt assumes (core/alignment.hpp); CUDA's allocators give 256 bytes.
  require(address_alignment(p) == kOperandAlignBytes, "cudaMallocAsync returned ", p, ", not ",
          kOperandAlignBytes, "-byte aligned");
  return p;
}

void* allocate(std::size_t bytes, Stream s, const char* what) {
  void* p = try_allocate(bytes, s);
  if (!p) {
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    fail("CUDA out of memory allocating ", bytes, " bytes for ", what, " on ",
         process_identity().describe(), " (", free_b, " of ", total_b, " bytes free)");
  }
  return p;
}

void release(void* p, Stream s) {
  if (p) WIOLA_CUDA(cudaFreeAsync(p, as_stream(s)));
}

void reserve_pool(std::size_t bytes, Stream s) {
  cudaMemPool_t pool = nullptr;
  WIOLA_CUDA(cudaDeviceGetDefaultMemPool(&pool, current_device()));
  std::uint64_t keep = ~std::uint64_t{0};
  WIOLA_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  if (bytes == 0) return;
  void* p = allocate(bytes, s, "the memory pool reserved for training");
  release(p, s);
  synchronize(s);
}

void memset_zero(void* p, std::size_t bytes, Stream s) { memset_bytes(p, 0, bytes, s); }

void memset_bytes(void* p, int value, std::size_t bytes, Stream s) {
  if (!bytes) return;
  count_device_event(DeviceEvent::Memset, static_cast<std::int64_t>(bytes));
  WIOLA_CUDA(cudaMemsetAsync(p, value, bytes, as_stream(s)));
}

void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes, Stream s) {
  if (!bytes) return;
  count_device_event(DeviceEvent::Copy);
  WIOLA_CUDA(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, as_stream(s)));
  synchronize(s);  // the host reads it next
}

void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes, Stream s) {
  if (!bytes) return;
  count_device_event(DeviceEvent::Copy);
  WIOLA_CUDA(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, as_stream(s)));
  // Pageable host memory: the copy is staged before the call returns, so the
  // caller may reuse its buffer.
}

void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream s) {
  if (!bytes) return;
  count_device_event(DeviceEvent::DeviceCopy, 2 * static_cast<std::int64_t>(bytes));
  WIOLA_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, as_stream(s)));
}

void begin_capture(Stream s) {
  // Thread-local: another thread's unsafe calls (a checkpoint writer's
  // copies) do not break this capture.
  WIOLA_CUDA(cudaStreamBeginCapture(as_stream(s), cudaStreamCaptureModeThreadLocal));
}

Graph end_capture(Stream s) {
  cudaGraph_t graph = nullptr;
  WIOLA_CUDA(cudaStreamEndCapture(as_stream(s), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t rc = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);  // the executable graph keeps what it needs
  if (rc != cudaSuccess) fail_call(rc, "cudaGraphInstantiate", __FILE__, __LINE__);
  return exec;
}

void abandon_capture(Stream s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(as_stream(s), &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(as_stream(s), &graph) == cudaSuccess && graph)
      cudaGraphDestroy(graph);
  }
  cudaGetLastError();  // an invalidated capture leaves its error behind
}

void launch_graph(Graph g, Stream s) {
  count_device_event(DeviceEvent::GraphLaunch);
  WIOLA_CUDA(cudaGraphLaunch(static_cast<cudaGraphExec_t>(g), as_stream(s)));
}

void destroy_graph(Graph g) {
  if (g) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g));  // on the way out
}

void* allocate_graph_memory(std::size_t bytes, const char* what) {
  count_device_event(DeviceEvent::Allocation);
  // cudaMalloc is not recorded by a capture, but a thread-local capture
  // refuses it unless the thread's mode is relaxed for the call.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  WIOLA_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  void* p = nullptr;
  const cudaError_t rc = cudaMalloc(&p, bytes);
  cudaThreadExchangeStreamCaptureMode(&mode);  // back to what it was
  if (rc == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    fail("CUDA out of memory allocating ", bytes, " bytes of graph memory for ", what, " on ",
         process_identity().describe(), " (", free_b, " of ", total_b, " bytes free)");
  }
  if (rc != cudaSuccess) fail_call(rc, "cudaMalloc", __FILE__, __LINE__);
  return p;
}

void release_graph_memory(void* p) {
  if (p) WIOLA_CUDA(cudaFree(p));
}

void check_launch(const char* kernel, std::int64_t bytes, const char* file, int line) {
  count_device_event(DeviceEvent::Launch, bytes);
  const cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess) fail_call(rc, kernel, file, line);
}

void memory_info(std::size_t& free_bytes, std::size_t& total_bytes) {
  WIOLA_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
}

}  // namespace wiola::cuda
