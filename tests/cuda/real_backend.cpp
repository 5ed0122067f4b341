// The backend under test of wiola_test_cuda_device_ops: the CUDA backend of
// this build's plugin (libwiola_cuda.so, loaded as the tools load it) on this
// machine's first device; every test skips, saying why, without one.
#include "backend/backend_registry.hpp"
#include "backend/select/device_backends.hpp"
#include "device_compare.hpp"

namespace wiola::test {

std::unique_ptr<Backend> make_device_backend(std::string& why_not) {
  static const bool registered = [] {
    register_device_backends();
    return true;
  }();
  (void)registered;
  const DeviceBackendProvider* cuda = device_backend(Device::CUDA);
  if (!cuda || cuda->device_count() == 0) {
    why_not = cuda ? cuda->unavailable_reason() : "this build has no CUDA backend";
    return nullptr;
  }
  return cuda->make(0);
}
const char* device_kind() { return "device"; }

}  // namespace wiola::test
