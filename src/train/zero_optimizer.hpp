#pragma once
// Data-parallel gradient reduction and the optimizer step, with ZeRO sharding
// (docs/parallelism.md):
//   zero 0  gradients all-reduced over the data-parallel group; every replica
//           keeps full AdamW state and updates every parameter.
//   zero 1  AdamW state (and, where weights are low precision, the fp32 master
//           copy) sharded by flat-buffer ranges; gradients reduce-scattered,
//           each rank updates its shard, parameters all-gathered.
//   zero 2  as 1, and each rank keeps only its shard of the gradient once the
//           step's last backward is done: each layer's bucket is reduce-
//           scattered as soon as its final gradient exists, overlapping the
//           rest of the cool-down backward, and the full buffer is released.
// The tied embedding's two copies (first and last stage) are summed over the
// embedding group first; the global norm counts them once (the last stage
// leaves its copy out). Shards may be uneven: any parameter count works.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "model/stage_model.hpp"
#include "optim/adamw_optimizer.hpp"

namespace wiola {

// Data-parallel rank r's shard [first, second) of a flat buffer of `total`
// elements split over `dp` ranks (shards differ by at most one element).
inline std::pair<std::int64_t, std::int64_t> zero_shard(std::int64_t total, int dp, int r) {
  return {total * r / dp, total * (r + 1) / dp};
}

struct ZeroGroups {
  comm::Communicator* world = nullptr;      // everyone: the global norm and loss
  comm::Communicator* data = nullptr;       // this stage's data-parallel replicas
  comm::Communicator* embedding = nullptr;  // first and last stage, when they differ
};

class ZeroOptimizer {
 public:
  ZeroOptimizer(StageModel& model, ZeroGroups groups, int zero_stage, AdamWConfig adam,
                bool count_embedding_in_norm);
  ~ZeroOptimizer();

  int zero_stage() const { return stage_; }
  std::int64_t shard_begin() const { return shard_begin_; }
  std::int64_t shard_end() const { return shard_end_; }
  AdamWOptimizer& adam() { return *adam_; }

  // ZeRO-2: layer l's gradient is final for this step; start reducing it.
  void on_layer_grads_final(int layer);
  // The ReduceGrads action: embedding-group sum, then the data-parallel reduction.
  void reduce_grads();

  struct StepInfo {
    double grad_norm = 0;   // before clipping
    bool skipped = false;   // NaN or Inf in the gradients: no update this step
    double loss_sum = 0;    // over all ranks
    double loss_tokens = 0;
  };
  // The OptimizerStep action. One all-reduce over the world gives the squared
  // norm and the step's loss; then clip, update the shard, gather parameters.
  StepInfo step(double lr, double clip, double local_loss_sum, double local_loss_tokens);

  // Updates taken so far (skipped steps do not count): AdamW's bias correction.
  long updates() const { return updates_; }
  void set_updates(long n) { updates_ = n; }  // when resuming from a checkpoint

 private:
  struct Bucket {
    std::int64_t begin, end;
    std::unique_ptr<comm::Request> pending;
  };
  void start_bucket(Bucket& b);
  std::vector<std::size_t> shard_counts(std::int64_t begin, std::int64_t end) const;
  double owned_sum_squares();

  StageModel& model_;
  ZeroGroups g_;
  int stage_;
  bool count_embedding_;
  int dp_ = 1, dp_rank_ = 0;
  std::int64_t total_ = 0, shard_begin_ = 0, shard_end_ = 0;
  std::vector<std::int64_t> shard_starts_;  // dp_ + 1 boundaries
  Tensor shard_grads_;                      // ZeRO >= 1
  std::vector<Bucket> layer_buckets_;  // [layer - first_layer]
  std::vector<Bucket> other_buckets_;  // embedding, final norm
  std::unique_ptr<AdamWOptimizer> adam_;
  long updates_ = 0;
  bool reduced_ = false;
};

}  // namespace wiola
