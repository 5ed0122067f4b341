#pragma once
// The cross-entropy loss on the device: logits [N, V] in the compute dtype are
// read in place, a block per row walking the vocabulary once with an online
// max and sum of exponentials in fp32 (no fp32 copy of the logits is made).
// loss and lse are fp32 [N, 1].
#include "backend/cuda/runtime.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda::kernels {

// lse[i] = log Σ_j exp(logits[i,j]); loss[i] = lse[i] − logits[i, t] with
// t = targets[i] (0 when t = −1; NaN when t >= V).
void cross_entropy_fwd(const Tensor& logits, const Tensor& targets, const Tensor& loss,
                       const Tensor& lse, Stream s);
// dlogits = scale · (exp(logits − lse) − onehot(t)); zero rows for t = −1.
// dlogits may be logits, or of another compute type than logits.
void cross_entropy_bwd(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                       double scale, const Tensor& dlogits, Stream s);

}  // namespace wiola::cuda::kernels
