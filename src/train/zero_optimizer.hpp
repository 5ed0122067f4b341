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
// leaves its copy out), and never counts the layout's padding. Shards may be
// uneven: any parameter count works.
// Everything works on backend buffers through backend ops and the
// communicator's tensor forms, so the buffers may live on a device.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "model/layer_boundaries.hpp"
#include "model/stage_model.hpp"
#include "optim/adamw_optimizer.hpp"
#include "train/zero_shard.hpp"

namespace wiola {

struct ZeroGroups {
  comm::Communicator* data = nullptr;       // this stage's data-parallel replicas
  comm::Communicator* embedding = nullptr;  // first and last stage, when they differ
};

// At the layer boundaries of a training step (model/layer_boundaries.hpp)
// it waits for a layer's parameter all-gather before its forward and starts
// a layer's gradient reduce-scatter (ZeRO-2) once its gradients are final.
class ZeroOptimizer final : public LayerBoundaries {
 public:
  ZeroOptimizer(StageModel& model, ZeroGroups groups, int zero_stage, AdamWConfig adam,
                bool count_embedding_in_norm);
  ~ZeroOptimizer();

  AdamWOptimizer& adam() { return *adam_; }
  // The weights of the optimizer's range [adam().begin(), adam().end()): the
  // fp32 master copy with bf16 parameters, else a view of the parameters.
  Tensor master() const;
  // The parameters were set from outside (imported weights): refresh the master.
  void take_master_from_params();

  // ZeRO-2: layer l's gradient is final for this step; start reducing it.
  void layer_grads_final(int layer) override;
  // ZeRO >= 1: wait_for_params(layer).
  void before_layer_forward(int layer) override { wait_for_params(layer); }
  // Embedding-group sum of the tied embedding's gradient, then the
  // data-parallel reduction (all-reduce, or reduce-scatter into the shard).
  void reduce_grads();
  // acc (F64 [1, 1], backend memory) += Σ g² over the reduced gradient
  // elements this rank owns, the last stage's copy of the tied embedding left
  // out, so that the world sum of every rank's part is the global norm².
  void add_owned_sum_squares(const Tensor& acc);
  // AdamW on the owned range with the gradient scaled by `grad_scale` (the
  // clip factor), then (ZeRO >= 1) the parameter all-gather, started per
  // bucket and not waited for: the next step's forwards wait for each
  // layer's parameters just before they need them (wait_for_params), so on
  // a device the gather overlaps the first forwards. Counts one update.
  void step(double lr, double grad_scale);
  // Before layer `layer`'s forward (-1: the embedding, final norm and head):
  // its parameters are gathered.
  void wait_for_params(int layer);
  // Every pending gather done: before reading the parameters outside a forward.
  void finish_gathers();
  // The step's update is skipped (a non-finite gradient norm on some rank).
  void skip_step();

  // Updates taken so far (skipped steps do not count): AdamW's bias correction.
  long updates() const { return updates_; }
  void set_updates(long n) { updates_ = n; }  // when resuming from a checkpoint

 private:
  struct Bucket {
    std::int64_t begin, end;
    std::unique_ptr<comm::Request> pending;    // the gradient reduce-scatter
    std::unique_ptr<comm::Request> gathering;  // the parameter all-gather
  };
  void start_bucket(Bucket& b);
  void start_gather(Bucket& b);
  std::vector<std::size_t> shard_counts(std::int64_t begin, std::int64_t end) const;

  StageModel& model_;
  ZeroGroups g_;
  int stage_;
  bool count_embedding_;
  int dp_ = 1, dp_rank_ = 0;
  std::int64_t total_ = 0, shard_begin_ = 0, shard_end_ = 0;
  std::vector<std::int64_t> shard_starts_;  // dp_ + 1 boundaries
  Tensor shard_grads_;                      // ZeRO >= 1
  std::vector<Bucket> layer_buckets_;  // [layer]; begin < 0 for layers held elsewhere
  std::vector<Bucket> other_buckets_;  // embedding, final norm
  std::unique_ptr<AdamWOptimizer> adam_;
  long updates_ = 0;
  bool reduced_ = false;
};

}  // namespace wiola
