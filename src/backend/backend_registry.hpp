#pragma once
// Device backends a build provides besides the CPU backend. A program built
// with CUDA registers "cuda" at start (cuda::register_backend()); the trainer
// then finds it here, so nothing above the backend layer links a device
// library or knows how it is made.
#include <functional>
#include <memory>
#include <string>

#include "backend/backend.hpp"

namespace wiola {

struct DeviceBackendProvider {
  Device device = Device::CUDA;
  std::string name;                                   // "cuda"
  std::function<int()> device_count;                  // usable devices; 0 when none
  std::function<std::string()> unavailable_reason;    // why device_count() is 0
  std::function<std::unique_ptr<Backend>(int index)> make;
  // The device's physical identity ("GPU-<uuid>"), the same whatever
  // CUDA_VISIBLE_DEVICES calls it: how ranks see that they would share one.
  std::function<std::string(int index)> device_id;
};

void register_device_backend(DeviceBackendProvider provider);
// The registered provider of `device`, or null when this build has none.
const DeviceBackendProvider* device_backend(Device device);

}  // namespace wiola
