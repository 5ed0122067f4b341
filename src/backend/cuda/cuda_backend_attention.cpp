// CudaBackend: the GCLA attention core, forward and backward.
#include "backend/cuda/cuda_backend.hpp"
#include "core/error.hpp"

namespace wiola::cuda {

void CudaBackend::attention_fwd(const AttentionDims&, const Tensor&, const Tensor&, const Tensor&,
                                std::span<const Tensor>, std::span<const Tensor>, const Tensor&,
                                const AttentionIndex&, const Tensor&, const Tensor&,
                                const Tensor&, const Tensor&, const Tensor&) {
  fail("attention_fwd: not in the CUDA backend yet");
}
void CudaBackend::attention_bwd(const AttentionDims&, const Tensor&, const Tensor&, const Tensor&,
                                std::span<const Tensor>, std::span<const Tensor>, const Tensor&,
                                const AttentionIndex&, const Tensor&, const Tensor&,
                                const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                const Tensor&, const Tensor&, std::span<const Tensor>,
                                std::span<const Tensor>, const Tensor&) {
  fail("attention_bwd: not in the CUDA backend yet");
}

}  // namespace wiola::cuda
