#pragma once
// Runs one stage's action list (pipeline/schedule.hpp) for one step: the
// forward and backward computations of its micro-batches and the
// non-blocking transfers of activations and gradients with the neighbouring
// stages. It returns what it measured; the gradient reduction, clipping and
// the optimizer step that follow are the trainer's. The executor knows
// nothing of which schedule produced the list.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.hpp"
#include "model/layer_boundaries.hpp"
#include "model/stage_model.hpp"
#include "pipeline/host_batch.hpp"
#include "pipeline/micro_batch_graphs.hpp"
#include "pipeline/schedule.hpp"
#include "pipeline/time_split.hpp"

namespace wiola {

using pipeline::Action;
using pipeline::ActionKind;

class StageExecutor {
 public:
  // One run of an action list.
  struct RunSpec {
    int step = 0;             // carried in every boundary header
    int microbatches = 0;     // m: micro-batches in the list
    int batch = 0, seq = 0;   // sequences per micro-batch, tokens per sequence
    bool training = true;     // backward actions allowed; ATM active
    double loss_scale = 0;    // weight of one token's loss in the objective (1 / global tokens)
  };
  // Where the first and last stage read micro-batch `mb` of the run.
  class MicrobatchSource {
   public:
    virtual ~MicrobatchSource() = default;
    virtual HostBatch microbatch(int mb) const = 0;
  };
  // Hears every action before it runs (profilers and test seams).
  class ActionObserver {
   public:
    virtual ~ActionObserver() = default;
    virtual void before_action(const Action& a) = 0;
  };
  // What a run is given besides its actions; every part is optional but the
  // micro-batches of the first and last stage.
  struct Hooks {
    const MicrobatchSource* batches = nullptr;
    // The step's overlap at layer boundaries (model/layer_boundaries.hpp):
    // before_layer_forward in every Forward; layer_grads_final in the last
    // Backward, or the last W of a split backward, of each chunk.
    LayerBoundaries* boundaries = nullptr;
    ActionObserver* observer = nullptr;
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
    // Last stage: Σ token losses of each micro-batch, F64 [m, 1] in backend
    // memory (read once per step by whoever needs it).
    Tensor loss_sums;
    // Last stage: counted target tokens of each micro-batch (host side).
    std::vector<std::int64_t> loss_tokens;
    // The run's share of the step's time split: compute, wait, comm, and its
    // wall time as `step` (the trainer adds its phases after the run).
    TimeSplit times;
    std::vector<ActionEvent> events;  // when Hooks::record_events
  };

  // `pipeline` is the pipeline-group communicator (rank = stage); null when stages == 1.
  StageExecutor(StageModel& model, comm::Communicator* pipeline, int stage, int stages);

  Result run(std::span<const Action> actions, const RunSpec& spec, const Hooks& hooks);
  // Model chunks (virtual stages) this stage holds.
  int chunks() const { return model_.num_chunks(); }

  // Whether training runs replay CUDA graphs of their micro-batches
  // (pipeline/micro_batch_graphs.hpp) where the backend records them. Each
  // chunk's first forward and last backward of a step run eagerly -- they
  // hear the step's layer boundaries, which overlap ZeRO's transfers with
  // the layers -- as do a split backward's B and W and evaluation runs.
  // Off by default.
  void use_graphs(bool on);
  // The graphs, when in use (for reports and tests).
  const MicroBatchGraphs* graphs() const { return graphs_.get(); }

 private:
  StageModel& model_;
  comm::Communicator* pipe_;
  int stage_, stages_;
  std::unique_ptr<MicroBatchGraphs> graphs_;
};

}  // namespace wiola
