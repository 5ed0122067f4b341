#pragma once
// What one rank's stage needs in memory, estimated before anything is
// allocated: weights, gradients, the optimizer's state (sharded by ZeRO), the
// activations of the micro-batches the schedule holds at once, and the
// workspace. The trainer prints it, refuses a layout that cannot fit the
// device, and prints the measured peak beside it after the first step.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/model_config.hpp"
#include "core/param_layout.hpp"
#include "pipeline/schedule.hpp"

namespace wiola {

struct MemoryPlanInput {
  ModelConfig model;
  std::vector<StageSpec> chunks;  // the stage's chunks (one unless interleaved)
  int stage_index = 0, pp = 1, dp = 1, zero = 0;
  DType dtype = DType::F32;  // compute dtype
  int micro_batch = 1;       // sequences per micro-batch
  int microbatches = 1;      // per replica per step
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::OneFOneB;
  bool recompute = false;
  bool device = false;  // a GPU: cuBLASLt workspace
  bool cuda_graphs = false;  // on a GPU, micro-batches replay graphs (--cuda-graphs)
};

struct MemoryEstimate {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, head = 0, workspace = 0;
  // CUDA graphs: each slot's own transients (pipeline/micro_batch_graphs.hpp).
  double graphs = 0;
  // Micro-batches (of one chunk each, when interleaved) held between forward
  // and the end of their backward: the peak of the stage's schedule.
  int in_flight = 1;
  int chunks = 1;
  double total() const {
    return weights + gradients + optimizer + activations + head + workspace + graphs;
  }
  // "3.21 GiB (weights 0.50, gradients 1.00, optimizer 0.66, activations 1.02 for 4
  // micro-batches, head 0.02, workspace 0.03)", with ", graphs 0.10" when they take any
  std::string describe() const;
};

MemoryEstimate estimate_memory(const MemoryPlanInput& in);

}  // namespace wiola
