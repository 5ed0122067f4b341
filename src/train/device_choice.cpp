#include "train/device_choice.hpp"

#include "backend/backend_registry.hpp"
#include "backend/cpu_threads.hpp"
#include "core/error.hpp"
#include "core/process_identity.hpp"

namespace wiola {

ChosenBackend choose_backend(DeviceChoice device, DType dtype, bool dtype_explicit,
                             int cuda_index) {
  const DeviceBackendProvider* cuda = device_backend(Device::CUDA);
  const int visible = cuda ? cuda->device_count() : 0;
  std::string why_cpu;
  bool use_cuda = false;
  switch (device) {
    case DeviceChoice::CPU: why_cpu = "--device cpu"; break;
    case DeviceChoice::CUDA:
      require(cuda != nullptr,
              "--device cuda: this build has no CUDA backend (configure with -DWIOLA_CUDA=ON "
              "on a machine with the CUDA toolkit)");
      require(visible > 0, "--device cuda: no CUDA device is usable on ",
              process_identity().describe(), " (", cuda->unavailable_reason(), ")");
      use_cuda = true;
      break;
    case DeviceChoice::Auto:
      use_cuda = visible > 0;
      if (!cuda)
        why_cpu = "this build has no CUDA backend";
      else if (!use_cuda)
        why_cpu = "no CUDA device: " + cuda->unavailable_reason();
      break;
  }
  ChosenBackend c;
  if (use_cuda) {
    c.dtype = dtype_explicit ? dtype : DType::BF16;
    require(c.dtype == DType::BF16 || c.dtype == DType::F32, "--dtype ", dtype_name(c.dtype),
            ": CUDA computes in bf16 or fp32");
    const int index = cuda_index >= 0 ? cuda_index % visible : process_identity().local_rank % visible;
    c.backend = cuda->make(index);
    c.description = c.backend->name() + " of " + std::to_string(visible) + " visible, local rank " +
                    std::to_string(process_identity().local_rank);
  } else {
    c.dtype = dtype_explicit ? dtype : DType::F32;
    require(c.dtype == DType::F32 || c.dtype == DType::F64, "--dtype ", dtype_name(c.dtype),
            ": the CPU computes in fp32 or fp64",
            c.dtype == DType::BF16 ? " (bf16 is the CUDA backend's)" : "");
    c.backend = make_cpu_backend();
    c.description = "cpu (" + why_cpu + "), OpenBLAS " + cpu_blas_kernel() + " kernel";
  }
  c.description += ", " + std::string(dtype_name(c.dtype));
  return c;
}

}  // namespace wiola
