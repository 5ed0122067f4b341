#pragma once
// GCLA layer summaries on the device, over x [batch·seq, d] in the compute
// dtype with fp32 running sums: the causal prefix mean (a scan down each
// sequence's rows, per column) and the whole-sequence mean.
#include "backend/cuda/runtime.hpp"
#include "core/model_config.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda::kernels {

// Causal: s [B·T, d], s[b,t] = mean of x[b,0..t]; Sequence: s [B, d].
void summary_fwd(SummaryMode mode, const Tensor& x, int batch, int seq, const Tensor& s,
                 Stream st);
// dx += ∂s/∂x applied to ds (added in fp32, rounded once).
void summary_bwd(SummaryMode mode, const Tensor& ds, int batch, int seq, const Tensor& dx,
                 Stream st);

}  // namespace wiola::cuda::kernels
