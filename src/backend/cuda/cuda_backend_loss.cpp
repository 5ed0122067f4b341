// CudaBackend: the cross-entropy loss, and the head's logits with their loss
// a block of rows at a time (head_loss_fwd/bwd): a block's logits are made
// in fp32 by one product and read by the loss kernel, so [N, V] logits never
// exist and the loss never reads them rounded to bf16. A forward given the
// gradients' outputs makes them from the same block; a backward makes the
// block's logits again.
#include <algorithm>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/device_counters.hpp"
#include "backend/cuda/kernels/cross_entropy.hpp"

namespace wiola::cuda {

void CudaBackend::do_cross_entropy_fwd(const Tensor& logits, const Tensor& targets,
                                       const Tensor& loss, const Tensor& lse) {
  kernels::cross_entropy_fwd(logits, targets, loss, lse, stream_);
}

void CudaBackend::do_cross_entropy_bwd(const Tensor& logits, const Tensor& targets,
                                       const Tensor& lse, double scale, const Tensor& dlogits) {
  kernels::cross_entropy_bwd(logits, targets, lse, scale, dlogits, stream_);
}

std::int64_t CudaBackend::head_block_rows(std::int64_t n, std::int64_t vocab,
                                          DType dtype) const {
  // A row of a block: its fp32 logits, and its gradient in the compute dtype
  // where that is not fp32 (in fp32 the gradient overwrites the logits).
  const std::int64_t row_bytes =
      vocab * std::int64_t(4 + (dtype == DType::F32 ? 0 : dtype_size(dtype)));
  const std::int64_t budget = std::int64_t(head_block_bytes_);
  const std::int64_t fit = std::max<std::int64_t>(1, budget / std::max<std::int64_t>(1, row_bytes));
  // Blocks of equal rows: the last one is not a sliver with a slow product.
  const std::int64_t blocks = (n + fit - 1) / fit;
  return blocks == 0 ? 0 : (n + blocks - 1) / blocks;
}

namespace {
// The floor of the head's loss is that of the cross-entropy op it stands for
// on logits in the compute dtype: the logits read once (and in the backward
// their gradient written once), a row's target, loss and lse. Its products'
// operands are not the non-GEMM work's; the fp32 logits it reads instead
// show as bytes above this floor.
void count_head_floor(std::int64_t n, std::int64_t vocab, DType dtype, int logit_passes,
                      std::int64_t row_bytes) {
  count_device_event(DeviceEvent::Floor,
                     n * vocab * std::int64_t(dtype_size(dtype)) * logit_passes + n * row_bytes);
}
}  // namespace

void CudaBackend::do_head_loss_fwd(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                                   const Tensor& loss, const Tensor& lse,
                                   const HeadLossGrads& grads) {
  head_loss_blocks(xf, embed, targets, lse, &loss, grads.dxf.defined() ? &grads : nullptr);
}

void CudaBackend::do_head_loss_bwd(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                                   const Tensor& lse, double scale, const Tensor& dxf,
                                   const Tensor& dembed) {
  const HeadLossGrads grads{scale, dxf, dembed};
  head_loss_blocks(xf, embed, targets, lse, nullptr, &grads);
}

void CudaBackend::head_loss_blocks(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                                   const Tensor& lse, const Tensor* loss,
                                   const HeadLossGrads* grads) {
  const std::int64_t n = xf.rows(), vocab = embed.rows();
  if (n == 0) return;
  count_head_floor(n, vocab, xf.dtype(), (loss ? 1 : 0) + (grads ? 2 : 0),
                   (loss ? 4 + 4 + 4 : 0) + (grads ? 4 + 4 : 0));
  const std::int64_t rows = head_block_rows(n, vocab, xf.dtype());
  const Tensor z = do_alloc_uninit(DType::F32, rows, vocab);
  // The products read the gradient in the compute dtype; fp32 overwrites z.
  const Tensor dz = !grads || xf.dtype() == DType::F32 ? z
                                                        : do_alloc_uninit(xf.dtype(), rows, vocab);
  for (std::int64_t r0 = 0; r0 < n; r0 += rows) {
    const std::int64_t r1 = std::min(n, r0 + rows);
    const Tensor zb = z.rows_slice(0, r1 - r0), xb = xf.rows_slice(r0, r1);
    const Tensor tb = targets.rows_slice(r0, r1), lb = lse.rows_slice(r0, r1);
    do_linear_fwd(xb, embed, zb, false);
    if (loss) kernels::cross_entropy_fwd(zb, tb, loss->rows_slice(r0, r1), lb, stream_);
    if (!grads) continue;
    const Tensor dzb = dz.rows_slice(0, r1 - r0);
    kernels::cross_entropy_bwd(zb, tb, lb, grads->scale, dzb, stream_);
    do_linear_bwd_weight(dzb, xb, grads->dembed);
    do_linear_bwd_data(dzb, embed, grads->dxf.rows_slice(r0, r1), false);
  }
}

}  // namespace wiola::cuda
