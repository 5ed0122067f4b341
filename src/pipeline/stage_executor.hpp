#pragma once
// Runs one stage's action list (pipeline/schedule.hpp) for one step: the
// forward and backward computations of its micro-batches, the non-blocking
// transfers of activations and gradients with the neighbouring stages, and the
// trainer's gradient reduction and optimizer step where the list says so.
// The executor knows nothing of which schedule produced the list.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "comm/communicator.hpp"
#include "model/stage_model.hpp"
#include "pipeline/schedule.hpp"
#include "train/batch_feed.hpp"

namespace wiola {

using pipeline::Action;
using pipeline::ActionKind;

// Seconds spent per category during one run.
struct StageTimes {
  double compute = 0;    // forward and backward
  double wait = 0;       // blocked waiting for a peer's activation or gradient (the bubble)
  double comm = 0;       // packing, unpacking, completing sends
  double optimizer = 0;  // gradient reduction, clipping, optimizer, parameter gather
  double total = 0;      // wall time of the run
  StageTimes& operator+=(const StageTimes& o);
};

class StageExecutor {
 public:
  struct Result;
  struct Hooks {
    std::function<HostBatch(int microbatch)> batch;  // called on the first and last stage only
    std::function<void()> reduce_grads;              // ReduceGrads action
    // OptimizerStep action; sees the loss gathered so far in the run.
    std::function<void(const Result&)> optimizer_step;
    // Runs after layer l's gradients are final for the step (the last backward).
    std::function<void(int layer)> final_layer_grads;
    // Runs before every action (fault injection in tests).
    std::function<void(const Action&)> before_action;
    // Record one ActionEvent per action in Result::events (profiling).
    bool record_events = false;
  };
  // One executed action: wall-clock interval (seconds on the steady clock) and
  // the part of it spent blocked on a peer.
  struct ActionEvent {
    Action action;
    double begin = 0, end = 0;
    double waited = 0;
  };
  struct Result {
    double loss_sum = 0;           // last stage
    std::int64_t loss_tokens = 0;  // last stage
    std::int64_t merged_tokens = 0;
    int peak_activations = 0;      // micro-batches held between forward and backward
    StageTimes times;
    std::vector<ActionEvent> events;  // when Hooks::record_events
  };

  // `pipeline` is the pipeline-group communicator (rank = stage); null when stages == 1.
  StageExecutor(StageModel& model, comm::Communicator* pipeline, int stage, int stages);

  // Every micro-batch is `batch` sequences of `seq` tokens. `training`:
  // backward actions allowed and ATM active. `loss_scale` is the weight of one
  // token's loss in the step's objective (1 / tokens in the global batch).
  Result run(std::span<const Action> actions, int step, int batch, int seq, bool training,
             double loss_scale, const Hooks& hooks);

 private:
  StageModel& model_;
  comm::Communicator* pipe_;
  int stage_, stages_;
};

}  // namespace wiola
