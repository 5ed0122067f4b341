#pragma once
// Token embedding on the device: the row gather of the forward pass and the
// deterministic scatter-add of its backward pass (scatter.cuh).
#include "backend/cuda/runtime.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda::kernels {

// out[i] = table[tokens[i]]; tokens I32 [N, 1] contiguous; table and out share
// the compute dtype. A token outside [0, V) gives a row of NaN (never a read
// out of bounds; the caller validates tokens on the host).
void embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out, Stream s);
// dtable (fp32) [tokens[i]] += dout[i], the rows of one token added in
// ascending i in fp32; bit-for-bit reproducible.
void embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable, Stream s);

}  // namespace wiola::cuda::kernels
