#pragma once
// Which backend a rank trains on (--device) and in which dtype (--dtype).
// CUDA comes from the provider the program registered (backend_registry.hpp);
// the trainer says which device each rank takes (train/device_plan.hpp); the
// other tools take (local rank mod visible devices).
#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "train/options.hpp"

namespace wiola {

struct ChosenBackend {
  std::unique_ptr<Backend> backend;
  DType dtype = DType::F32;  // the resolved compute dtype
  std::string description;   // "cuda (NVIDIA H200, device 3 of 8, local rank 3), bf16"
};

// Throws wiola::Error naming the option and the reason when the choice cannot
// be honoured (--device cuda without CUDA in this build or without a device;
// a dtype the device does not compute in).
// CUDA takes device `cuda_index` among the visible ones (train/device_plan.hpp);
// -1: the local rank's, modulo their count.
ChosenBackend choose_backend(DeviceChoice device, DType dtype, bool dtype_explicit,
                             int cuda_index = -1);

}  // namespace wiola
