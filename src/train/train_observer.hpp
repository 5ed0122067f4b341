#pragma once
// What a training run shows to whoever watches it on this rank: profilers
// (every step's measurements and timeline) and test seams (fault injection
// before an action or while a checkpoint is written). The training loop
// calls these hooks and knows nothing of who listens.
#include <cstdint>
#include <vector>

#include "pipeline/stage_executor.hpp"
#include "pipeline/time_split.hpp"

namespace wiola {

class StageModel;

// The trainer's own work after the schedule's actions.
enum class StepPhase : std::uint8_t {
  ReduceGrads,  // tied-embedding sum and the data-parallel gradient reduction
  Optimizer,    // the world all-reduce of norm and loss, clipping, AdamW, parameter gather
};

struct PhaseEvent {
  StepPhase phase = StepPhase::ReduceGrads;
  double begin = 0, end = 0;  // steady-clock seconds
};

struct StepRecord {
  std::int64_t step = 0;
  const StageExecutor::Result* run = nullptr;  // the executor's measurements and events
  // This step's time split as this rank measures it alone: the executor's
  // compute, wait and comm, the ReduceGrads phase as reduce, the world
  // all-reduce of norm and loss that opens the optimizer phase as drain, the
  // rest of that phase as optimizer (pipeline/time_split.hpp).
  TimeSplit times;
  PhaseEvent reduce, optimizer;
  double loss = 0, grad_norm = 0;
  bool skipped = false;  // non-finite loss or gradient norm: no update
};

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  // When true, each step's run carries one event per executed action.
  virtual bool wants_events() const { return false; }
  // Before training step `step` starts, on every rank. A test seam may alter
  // the model here (fault injection: parameters that turned NaN).
  virtual void before_step(std::int64_t /*step*/, StageModel& /*model*/) {}
  // Before every schedule action of training step `step`.
  virtual void before_action(std::int64_t /*step*/, const pipeline::Action& /*a*/) {}
  // While this rank writes its file of the checkpoint of `step`, after each tensor.
  virtual void on_checkpoint_write(std::int64_t /*step*/) {}
  // Rank 0, saving the checkpoint of `step`: older checkpoints beyond --keep
  // (or a previous save of the same step) have been renamed to hidden names
  // and are about to be deleted.
  virtual void on_checkpoints_retired(std::int64_t /*step*/) {}
  // After each optimizer step, on every rank.
  virtual void on_step(const StepRecord& /*record*/) {}
};

}  // namespace wiola
