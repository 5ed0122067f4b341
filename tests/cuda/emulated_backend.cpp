// The backend under test of wiola_test_cuda_emu_ops: the CUDA backend's own
// source on the emulated execution model (tests/cuda_emu).
#include "backend/cuda/cuda_backend.hpp"
#include "device_compare.hpp"

namespace wiola::test {

std::unique_ptr<Backend> make_device_backend(std::string&) {
  return std::make_unique<cuda::CudaBackend>(0);
}
const char* device_kind() { return "emulated"; }

}  // namespace wiola::test
