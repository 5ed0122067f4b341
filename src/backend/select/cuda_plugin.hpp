#pragma once
// The CUDA backend as a plugin: libwiola_cuda.so holds the CUDA backend and
// the NCCL communicator, and is the only part of wiola that loads a CUDA
// library. Programs load it at the first question about a CUDA device
// (device_backends.cpp), so CPU runs need no CUDA library at all, and the
// kernels exist once however many programs use them.
//
// The plugin holds no copy of wiola_core or wiola_comm: its references to
// them bind to the program that loads it (programs link those libraries whole
// and export their symbols: wiola_device_program() in src/CMakeLists.txt), so
// there is one of every piece of process state (the backend registry, the
// peer watch, the MPI runtime).
#include "backend/backend_registry.hpp"
#include "comm/device_groups.hpp"

namespace wiola {

// Bumped whenever this struct or the meaning of a member changes.
inline constexpr int kCudaPluginAbi = 2;
inline constexpr const char* kCudaPluginFile = "libwiola_cuda.so";
inline constexpr const char* kCudaPluginEntry = "wiola_cuda_plugin_entry";

struct CudaPluginExports {
  int abi = 0;
  // WIOLA_CODE_VERSION of the plugin's build: the program refuses a plugin of
  // another build (their classes may differ).
  const char* code_version = nullptr;
  DeviceBackendProvider backend;
  comm::DeviceGroupsMaker device_groups = nullptr;  // null without NCCL
};

// The plugin's one exported function fills `out`.
using CudaPluginEntryFn = void (*)(CudaPluginExports* out);

}  // namespace wiola
