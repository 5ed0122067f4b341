#pragma once
// The few CUDA runtime calls the backend makes, behind plain C++ signatures.
// Two implementations: runtime_cuda.cpp (the CUDA runtime) and, for tests on
// machines without a GPU, the test tree's host stand-in (tests/cuda_emu).
// Every call is checked: a failure throws wiola::Error naming the call, the
// source file and line, this process's rank and host, and CUDA's message.
#include <cstddef>
#include <cstdint>
#include <string>

namespace wiola::cuda {

using Stream = void*;  // cudaStream_t

struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0;  // compute capability
  std::size_t memory_bytes = 0;
  int multiprocessors = 0;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi -L prints it
};

// Devices this process can use; 0 without a device or driver (never throws).
int device_count();
// Why device_count() is 0 ("no CUDA driver", "no device"), for messages.
std::string no_device_reason();
void set_device(int index);
int current_device();
DeviceProperties device_properties(int index);

Stream create_stream();
void destroy_stream(Stream s);
void synchronize(Stream s);

// Stream-ordered memory: valid for work queued on `s` after the call.
// Throws wiola::Error naming `what` and the size when the device is full.
void* allocate(std::size_t bytes, Stream s, const char* what);
// As allocate, but nullptr when the device is full (other failures throw).
void* try_allocate(std::size_t bytes, Stream s);
void release(void* p, Stream s);
// Makes the device's stream-ordered pool keep freed memory (no release back
// to the driver) and grows it to at least `bytes` now.
void reserve_pool(std::size_t bytes, Stream s);
void memset_zero(void* p, std::size_t bytes, Stream s);
void memset_bytes(void* p, int value, std::size_t bytes, Stream s);  // every byte = value
void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes, Stream s);
void copy_to_device(void* device_dst, const void* host_src, std::size_t bytes, Stream s);
void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream s);

// CUDA graphs. Between begin_capture and end_capture the work queued on `s`
// (kernels, matrix products, memsets, device-to-device copies) is recorded,
// not run; end_capture returns it instantiated, and each launch_graph runs
// all of it on `s` again, with the addresses and values it was recorded
// with. During a capture the calls CUDA refuses there -- a synchronisation,
// a stream-ordered allocation, a copy to or from host memory -- throw
// wiola::Error naming the call; abandon_capture then ends it, dropping what
// it recorded.
using Graph = void*;  // cudaGraphExec_t
void begin_capture(Stream s);
Graph end_capture(Stream s);
void abandon_capture(Stream s);
void launch_graph(Graph g, Stream s);
void destroy_graph(Graph g);
// Memory a graph's tensors own, which may be allocated during its capture
// (cudaMalloc with the thread's capture mode relaxed, as a graph's private
// memory pool is filled). Counted as an allocation; give it back with
// release_graph_memory once no queued work uses it.
void* allocate_graph_memory(std::size_t bytes, const char* what);
void release_graph_memory(void* p);

// After a kernel launch: counts it with the distinct bytes it reads and
// writes in device memory (device_counters.hpp), and reports a launch error
// naming the kernel.
void check_launch(const char* kernel, std::int64_t bytes, const char* file, int line);
#define WIOLA_CHECK_LAUNCH(kernel, bytes) \
  ::wiola::cuda::check_launch(kernel, bytes, __FILE__, __LINE__)

// Free and total memory of the current device (bytes).
void memory_info(std::size_t& free_bytes, std::size_t& total_bytes);

}  // namespace wiola::cuda
