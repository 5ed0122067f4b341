#include "backend/backend_registry.hpp"

#include <vector>

namespace wiola {

namespace {
std::vector<DeviceBackendProvider>& providers() {
  static std::vector<DeviceBackendProvider> list;
  return list;
}
}  // namespace

void register_device_backend(DeviceBackendProvider provider) {
  for (auto& p : providers())
    if (p.device == provider.device) {
      p = std::move(provider);
      return;
    }
  providers().push_back(std::move(provider));
}

const DeviceBackendProvider* device_backend(Device device) {
  for (const auto& p : providers())
    if (p.device == device) return &p;
  return nullptr;
}

}  // namespace wiola
