#pragma once
// What a profiled (or projected) run looks like: the model, the partition,
// the grid and the batch. Shared by the metrics, the report and the simulator.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/model_config.hpp"
#include "core/param_layout.hpp"
#include "pipeline/schedule.hpp"

namespace wiola {
struct TrainOptions;
}

namespace wiola::profile {

struct RunLayout {
  ModelConfig model;               // as trained (the dataset's vocabulary adopted)
  std::vector<StageSpec> stages;   // index = virtual stage c * pp + s (= stage when v = 1)
  int pp = 1, dp = 1;
  int micro_batch = 1;             // sequences per micro-batch
  int microbatches = 1;            // per replica per step (m)
  int global_batch = 1;            // sequences per step, all replicas
  int zero = 0;
  int threads = 0;                 // CPU threads per rank (0: library default)
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::OneFOneB;
  int virtual_stages = 1;          // chunks per stage (interleaved)
  DType dtype = DType::F32;

  int world() const { return pp * dp; }
  std::int64_t tokens_per_step() const { return std::int64_t(global_batch) * model.T; }
  // Training FLOPs per token of stage s (the one formula, model/flops.hpp):
  // 3 x forward of its layers, plus the head on the last stage.
  double stage_flops_per_token(int s) const;
  // Bytes of the boundary message stage s sends to s + 1 per micro-batch (the
  // gradient coming back has the same size); 0 for the last stage.
  double message_bytes(int s) const;
  // Parameters held by stage s (its flat buffer, the tied embedding copy included).
  std::int64_t stage_params(int s) const;
  // "pp 2 x dp 1, 1f1b, zero 0, m 4 x micro-batch 4"
  std::string describe() const;
};

RunLayout layout_from(const TrainOptions& opts, const std::vector<StageSpec>& stages);

}  // namespace wiola::profile
