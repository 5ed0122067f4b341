#pragma once
// ATM's token plan built on the device from rho (ops/token_plan.hpp is the
// reference): no host round trip, so an ATM layer needs no host
// synchronisation and a micro-batch can be captured as a CUDA graph.
#include "backend/backend.hpp"
#include "backend/cuda/runtime.hpp"

namespace wiola::cuda::kernels {

// One block per sequence. rho is fp32 [B·T, 1]; every tensor of `plan` is
// written whole (unmerge for paper plans only), the same values as
// ops::atm_plan for the same rho.
void atm_plan(const Tensor& rho, int batch, int seq, double tau, bool paper, bool causal_summary,
              const TokenPlanTensors& plan, Stream s);

}  // namespace wiola::cuda::kernels
