#pragma once
// The schedule simulator (docs/profiling.md, "Simulator"): executes the action
// lists of pipeline::make_schedules for every rank of a PP x DP grid, event by
// event, with given compute durations and a network model, and returns the
// same per-rank records a measured run produces, so the same metrics code
// turns both into step time, time split and bubble.
//
// Model of one step:
//  * A rank (stage s) holds `chunks` model chunks; chunk c is virtual stage
//    k = c * pp + s and has its own costs (stages[k]). Forward / Backward of
//    virtual stage k take forward_s / backward_s per micro-batch; a split
//    backward (ZB-H1, ZB-H2) runs B = backward_s - weight_s, then W =
//    weight_s. Compute starts when the rank is free and its input message
//    has arrived (W needs none).
//  * A message (activation k -> k+1, gradient k+1 -> k; from the last rank
//    to rank 0 and back for the interleaved schedule's wrap) starts when it
//    is posted by the sender and its receive is posted (rendezvous), and no
//    earlier message of the same kind occupies the link from that sender to
//    that receiver (the executor's FIFO per peer and direction: the chunks'
//    messages between two ranks queue behind each other); it takes
//    link.time(bytes) on the link between the two world ranks
//    (world_rank = stage * dp + dp_index; Cluster says intra- or inter-node).
//    Activations and gradients travelling the same way between the same two
//    ranks (pp 2, interleaved) do not contend.
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

// The costs of one virtual stage (one chunk of a rank; the rank itself when
// chunks = 1). Rank-level quantities (optimizer_s, other_s, grad_bytes,
// param_bytes, buckets) are summed over a rank's chunks; embed_bytes is read
// from virtual stage 0.
struct SimStage {
  double forward_s = 0, backward_s = 0;  // per micro-batch: compute, packing and unpacking
  double message_bytes = 0;              // boundary message to the next virtual stage per micro-batch
  double grad_bytes = 0;                 // gradient buffer the data group reduces
  double param_bytes = 0;                // parameters all-gathered after the update (ZeRO >= 1)
  double embed_bytes = 0;                // tied-embedding gradient (first and last stage)
  double optimizer_s = 0;                // norm, clip and AdamW over the whole stage
  double other_s = 0;                    // per step, outside the executor
  int buckets = 1;                       // gradient buckets (one per layer) for ZeRO-2's overlap
  // The part of backward_s that is the weight-gradient GEMMs: a split
  // backward's W (B takes the rest). Negative: unknown, then half of
  // backward_s (kDefaultWeightShare; see weight_seconds).
  double weight_s = -1;
};

// Without a measured split, W is taken as this share of the backward: a
// linear layer's backward is two GEMMs of the same size (dX = dY W^T and
// dW = X^T dY), so dW is half of the linear layers' backward FLOPs; the
// attention scores' backward and the element-wise ops only produce input
// gradients, so the true share is a little below one half.
inline constexpr double kDefaultWeightShare = 0.5;
// weight_s when given (clamped to [0, backward_s]), else kDefaultWeightShare x backward_s.
double weight_seconds(const SimStage& s);

struct SimInput {
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::OneFOneB;
  int pp = 1, dp = 1, microbatches = 1, zero = 0;
  int chunks = 1;  // model chunks (virtual stages) per rank: interleaved only
  // Data-parallel collectives overlap compute (a device transport on its own
  // stream): ZeRO-2's per-layer reduce-scatters run during the stage's last
  // backward, and ZeRO >= 1's parameter gathers during the next step's wait
  // for its first input and its first forward.
  bool overlap_comm = false;
  Cluster cluster;
  std::vector<SimStage> stages;  // index = virtual stage c * pp + s (pp * chunks of them)
};

struct SimResult {
  double step_s = 0;                // the slowest rank's step
  std::vector<RankRecord> records;  // index = world rank; one step each
};

// Throws wiola::Error on inconsistent input (or a schedule that deadlocks).
SimResult simulate(const SimInput& in);

}  // namespace wiola::profile
