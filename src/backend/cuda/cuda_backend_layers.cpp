// CudaBackend: embedding, WRMSNorm, SRPE, summaries, ATM row maps and the
// cross-entropy loss.
#include "backend/cuda/cuda_backend.hpp"
#include "core/error.hpp"

namespace wiola::cuda {

void CudaBackend::embedding_fwd(const Tensor&, const Tensor&, const Tensor&) {
  fail("embedding_fwd: not in the CUDA backend yet");
}
void CudaBackend::embedding_bwd(const Tensor&, const Tensor&, const Tensor&) {
  fail("embedding_bwd: not in the CUDA backend yet");
}
void CudaBackend::wrmsnorm_fwd(const Tensor&, const Tensor&, const Tensor&, double, const Tensor&,
                               const Tensor&) {
  fail("wrmsnorm_fwd: not in the CUDA backend yet");
}
void CudaBackend::wrmsnorm_bwd(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                               const Tensor&, const Tensor&, bool, const Tensor&, const Tensor&) {
  fail("wrmsnorm_bwd: not in the CUDA backend yet");
}
void CudaBackend::srpe_fwd(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int,
                           const Tensor&) {
  fail("srpe_fwd: not in the CUDA backend yet");
}
void CudaBackend::srpe_bwd(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int,
                           const Tensor&) {
  fail("srpe_bwd: not in the CUDA backend yet");
}
void CudaBackend::summary_fwd(SummaryMode, const Tensor&, int, int, const Tensor&) {
  fail("summary_fwd: not in the CUDA backend yet");
}
void CudaBackend::summary_bwd(SummaryMode, const Tensor&, int, int, const Tensor&) {
  fail("summary_bwd: not in the CUDA backend yet");
}
void CudaBackend::row_cosine_next(const Tensor&, int, int, const Tensor&) {
  fail("row_cosine_next: not in the CUDA backend yet");
}
void CudaBackend::merge_rows_fwd(const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
  fail("merge_rows_fwd: not in the CUDA backend yet");
}
void CudaBackend::merge_rows_bwd(const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
  fail("merge_rows_bwd: not in the CUDA backend yet");
}
void CudaBackend::cross_entropy_fwd(const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
  fail("cross_entropy_fwd: not in the CUDA backend yet");
}
void CudaBackend::cross_entropy_bwd(const Tensor&, const Tensor&, const Tensor&, double,
                                    const Tensor&) {
  fail("cross_entropy_bwd: not in the CUDA backend yet");
}

}  // namespace wiola::cuda
