// The backend under test of wiola_test_cuda_device_ops: the CUDA backend on
// this machine's first device; every test skips, saying why, without one.
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/runtime.hpp"
#include "device_compare.hpp"

namespace wiola::test {

std::unique_ptr<Backend> make_device_backend(std::string& why_not) {
  if (cuda::device_count() == 0) {
    why_not = cuda::no_device_reason();
    return nullptr;
  }
  return std::make_unique<cuda::CudaBackend>(0);
}
const char* device_kind() { return "device"; }

}  // namespace wiola::test
