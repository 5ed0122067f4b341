#pragma once
// The schedule simulator (docs/profiling.md, "Simulator"): executes the action
// lists of pipeline::make_schedules for every rank of a PP x DP grid, event by
// event, with given compute durations and a network model, and returns the
// same per-rank records a measured run produces, so the same metrics code
// turns both into step time, time split and bubble.
//
// Model of one step:
//  * Forward / Backward of stage s take forward_s / backward_s per micro-batch;
//    they start when the rank is free and their input message has arrived.
//  * A message (activation s -> s+1, gradient s+1 -> s) starts when it is
//    posted by the sender and its receive is posted (rendezvous), and no
//    earlier message occupies the same link in the same direction; it takes
//    link.time(bytes) on the link between the two world ranks
//    (world_rank = stage * dp + dp_index; Cluster says intra- or inter-node).
//  * ReduceGrads waits for the rank's sends, then sums the tied embedding
//    between the first and last stage (pp > 1), then reduces the gradient
//    over the data group: ring all-reduce (ZeRO 0) or reduce-scatter (1, 2).
//  * OptimizerStep: a world all-reduce of the norm (latency only), the update
//    (optimizer_s, divided by dp under ZeRO >= 1), then the ring all-gather of
//    the parameters (ZeRO >= 1).
//  * other_s per step (outside the executor) starts each rank's step.
// ZeRO-2's overlap of bucket reductions with the last backward is not
// credited (the prediction is an upper bound there).
#include <vector>

#include "pipeline/schedule.hpp"
#include "profile/recorder.hpp"
#include "wiola-profile/cluster.hpp"

namespace wiola::profile {

struct SimStage {
  double forward_s = 0, backward_s = 0;  // per micro-batch: compute, packing and unpacking
  double message_bytes = 0;              // boundary message to the next stage per micro-batch
  double grad_bytes = 0;                 // gradient buffer the data group reduces
  double param_bytes = 0;                // parameters all-gathered after the update (ZeRO >= 1)
  double embed_bytes = 0;                // tied-embedding gradient (first and last stage)
  double optimizer_s = 0;                // norm, clip and AdamW over the whole stage
  double other_s = 0;                    // per step, outside the executor
  int buckets = 1;                       // gradient buckets (one per layer) for ZeRO-2's overlap
};

struct SimInput {
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::OneFOneB;
  int pp = 1, dp = 1, microbatches = 1, zero = 0;
  // Data-parallel collectives overlap compute (a device transport on its own
  // stream): ZeRO-2's per-layer reduce-scatters run during the stage's last
  // backward, and ZeRO >= 1's parameter gathers during the next step's wait
  // for its first input and its first forward.
  bool overlap_comm = false;
  Cluster cluster;
  std::vector<SimStage> stages;  // index = stage
};

struct SimResult {
  double step_s = 0;                // the slowest rank's step
  std::vector<RankRecord> records;  // index = world rank; one step each
};

// Throws wiola::Error on inconsistent input (or a schedule that deadlocks).
SimResult simulate(const SimInput& in);

}  // namespace wiola::profile
