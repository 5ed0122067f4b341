#pragma once
// Records the measured steps of a training run on one rank (a TrainObserver),
// and gathers every rank's record to rank 0.
//
// Clock alignment: after the last warm-up step every rank enters a world
// barrier and then measures its clock's offset to rank 0's
// (profile/clock_sync.hpp); every time is in seconds since rank 0 left the
// barrier, on a clock common to all ranks.
#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "pipeline/schedule.hpp"
#include "pipeline/stage_executor.hpp"
#include "train/trainer.hpp"

namespace wiola::profile {

// What a timeline entry is: one of the schedule's actions (same names as
// pipeline::ActionKind), or one of the two phases the trainer runs after them.
enum class EventKind : std::uint8_t {
  RecvActivation,
  Forward,
  SendActivation,
  RecvGrad,
  Backward,
  SendGrad,
  ReduceGrads,    // StepPhase::ReduceGrads
  OptimizerStep,  // StepPhase::Optimizer
  BackwardInput,  // a split backward's B (zero-bubble schedules)
  BackwardWeight, // its W
};
EventKind event_kind(pipeline::ActionKind k);
EventKind event_kind(StepPhase p);

// One executed action (or trainer phase) of a measured step.
struct TimedAction {
  int step = 0;  // measured step, 1-based
  EventKind kind = EventKind::Forward;
  int microbatch = -1;  // -1 for the trainer's phases
  double begin = 0, end = 0;  // seconds since the common origin
  double waited = 0;          // of which blocked on a peer (at the start of the action)
  int chunk = 0;              // the stage's model chunk (interleaved schedules)
};

struct RankRecord {
  int rank = 0, stage = 0, dp_index = 0;
  int steps = 0;                  // measured steps
  // Summed over the measured steps, as the rank measured them alone: the
  // executor's compute, wait and comm, the trainer's reduce, drain and
  // optimizer phases, the step's wall time. The profiler divides the phases
  // again on the aligned timeline (metrics.cpp).
  TimeSplit times;
  double window_s = 0;            // origin to the end of the last measured step
  std::vector<double> step_ends;  // seconds since the origin, per measured step
  double peak_flops = 0;          // this rank's peak (FLOP/s)
  double peak_rss_bytes = 0;
  std::vector<TimedAction> actions;
};

class StepRecorder final : public TrainObserver {
 public:
  // Steps 1..warmup are not recorded; the barrier follows step `warmup` (>= 1).
  StepRecorder(comm::Communicator& world, int warmup_steps);
  bool wants_events() const override { return armed_; }
  void on_step(const StepRecord& record) override;
  RankRecord& record() { return rec_; }

 private:
  comm::Communicator& world_;
  int warmup_;
  bool armed_ = false;
  double t0_ = 0;  // the common origin, in this rank's steady-clock seconds
  RankRecord rec_;
};

// Every rank's record on rank 0 (index = world rank), by point-to-point
// messages over `world`; an empty vector on the other ranks. Collective.
std::vector<RankRecord> gather_records(comm::Communicator& world, const RankRecord& mine);

}  // namespace wiola::profile
