#include "backend/select/device_backends.hpp"

#if defined(WIOLA_WITH_CUDA)
#include "backend/cuda/cuda_backend.hpp"
#endif

namespace wiola {

void register_device_backends() {
#if defined(WIOLA_WITH_CUDA)
  cuda::register_backend();
#endif
}

}  // namespace wiola
