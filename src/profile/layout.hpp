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
  int num_virtual() const { return pp * virtual_stages; }
  // The virtual stages stage (rank) s holds: s, pp + s, 2 pp + s, ...
  std::vector<int> chunks_of(int s) const;
  // Per VIRTUAL stage k (= stage when v = 1):
  // Training FLOPs per token of virtual stage k (the one formula,
  // model/flops.hpp): 3 x forward of its layers, plus the head on the last one.
  double stage_flops_per_token(int k) const;
  // Bytes of the boundary message virtual stage k sends to k + 1 per
  // micro-batch (the gradient coming back has the same size); 0 for the last.
  double message_bytes(int k) const;
  // Parameters of virtual stage k alone (the tied embedding copy included).
  std::int64_t stage_params(int k) const;
  // Per stage (rank) s, over its chunks (the same as above when v = 1):
  std::vector<StageSpec> rank_chunks(int s) const;  // partition/partition.hpp stage_chunks
  double rank_flops_per_token(int s) const;
  double rank_message_bytes(int s) const;  // what it sends forward per micro-batch, all chunks
  std::int64_t rank_params(int s) const;   // its flat buffer (ParamLayout over its chunks)
  // "[0,4)" or, with chunks, "[0,2)+[4,6)".
  std::string rank_layers(int s) const;
  // "pp 2 x dp 1, 1f1b, zero 0, m 4 x micro-batch 4"
  std::string describe() const;
};

RunLayout layout_from(const TrainOptions& opts, const std::vector<StageSpec>& stages);

}  // namespace wiola::profile
