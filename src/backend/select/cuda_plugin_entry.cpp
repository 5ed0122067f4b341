// The entry point of libwiola_cuda.so (cuda_plugin.hpp): what the plugin
// gives the program that loads it.
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/runtime.hpp"
#include "backend/select/cuda_plugin.hpp"
#if defined(WIOLA_WITH_NCCL)
#include "comm/nccl_communicator.hpp"
#endif

#ifndef WIOLA_CODE_VERSION
#error "src/CMakeLists.txt defines WIOLA_CODE_VERSION for the plugin's entry"
#endif

extern "C" __attribute__((visibility("default"))) void wiola_cuda_plugin_entry(
    wiola::CudaPluginExports* out) {
  using namespace wiola;
  out->abi = kCudaPluginAbi;
  out->code_version = WIOLA_CODE_VERSION;
  out->backend = {Device::CUDA, "cuda", [] { return cuda::device_count(); },
                  [] { return cuda::no_device_reason(); },
                  [](int index) -> std::unique_ptr<Backend> {
                    return std::make_unique<cuda::CudaBackend>(index);
                  },
                  [](int index) { return cuda::device_properties(index).uuid; }};
#if defined(WIOLA_WITH_NCCL)
  out->device_groups = [](comm::Communicator& world, const comm::ProcessGrid& grid,
                          void* compute_stream, std::ostream* log) {
    return comm::make_device_groups(world, grid, compute_stream, log);
  };
#endif
}
