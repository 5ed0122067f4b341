#pragma once
// Turns the gathered rank records of a profiled run into the numbers users
// choose layouts by (docs/profiling.md, "Metrics"): per rank, per stage and
// overall, the time split of a step, the bubble, tokens/s, model FLOP/s and
// MFU against the peak.
//
// The split of one step on one rank, in seconds (sums to `step`):
//   compute    forward and backward kernels (StageTimes::compute)
//   wait       blocked on a neighbour's activation or gradient (StageTimes::wait)
//   drain      idle at the end of the step until the last rank reaches the
//              gradient reduction (the pipeline's cool-down bubble, which the
//              executor counts under optimizer time because the rank sits in a
//              collective); estimated from the aligned action timeline
//   comm       packing, unpacking and completing point-to-point sends
//   reduce     the gradient reduction (ReduceGrads) after the drain
//   optimizer  the rest of the optimizer time: norm, clip, AdamW, ZeRO gather
//   other      step wall time not inside any of these (data loading, bookkeeping)
// bubble = (wait + drain) / step.
#include <string>
#include <vector>

#include "profile/layout.hpp"
#include "profile/recorder.hpp"

namespace wiola::profile {

struct TimeSplit {
  double compute = 0, wait = 0, drain = 0, comm = 0, reduce = 0, optimizer = 0, other = 0;
  double step = 0;
  double bubble() const { return step > 0 ? (wait + drain) / step : 0; }
  TimeSplit& operator+=(const TimeSplit& o);
  TimeSplit scaled(double f) const;
};

struct RankMetrics {
  int rank = 0, stage = 0, dp_index = 0;
  TimeSplit t;                      // per step
  double flops_per_s = 0;           // model FLOPs of its stage x its tokens / step time
  double peak_flops = 0;
  double mfu = 0;                   // flops_per_s / peak_flops
  double compute_mfu = 0;           // the same FLOPs over compute time only
  double peak_rss_bytes = 0;
  double forward_s = 0, backward_s = 0;  // per micro-batch, waits excluded (means)
  // Per step, time inside no action at all: the trainer's work between steps
  // (its per-step all-reduce of stop flags included) and between actions.
  // The rest of `other` (data loading on the first and last stage) is inside
  // Forward, so forward_s carries it.
  double outside_s = 0;
};

struct StageMetrics {
  int stage = 0;
  StageSpec spec;
  int replicas = 0;
  TimeSplit t;                      // mean over the stage's replicas
  double tokens_per_s = 0;          // the global batch's tokens / this stage's step time
  double flops_per_s = 0;           // sum over replicas
  double peak_flops = 0;            // sum over replicas
  double mfu = 0, compute_mfu = 0;
  double peak_rss_bytes = 0;        // largest replica
  double forward_s = 0, backward_s = 0;  // per micro-batch (means over replicas)
  double outside_s = 0;                  // per step (mean over replicas)
  double message_bytes = 0;         // to the next stage, per micro-batch
  double train_flops_per_token = 0;
};

struct OverallMetrics {
  TimeSplit t;                      // mean over ranks
  double step_s = 0;                // the slowest rank's step: throughput uses it
  double tokens_per_s = 0;
  double flops_per_s = 0;           // training FLOPs per token x tokens/s
  double peak_flops = 0;            // sum over ranks
  double mfu = 0;
  double compute_mfu = 0;           // every rank's FLOPs over its compute time, over the peak sum
  double bubble = 0;                // mean over ranks of (wait + drain) / step
  double bubble_theory = 0;         // pipeline::theoretical_bubble(schedule, pp, m)
  double peak_rss_bytes = 0;        // largest rank
  std::vector<double> step_times;   // per measured step, the slowest rank's
};

struct Metrics {
  std::vector<RankMetrics> ranks;
  std::vector<StageMetrics> stages;
  OverallMetrics overall;
};

// The split of every rank's step (index = world rank), averaged over its
// measured steps. Needs no layout: the simulator's records go through it too.
std::vector<TimeSplit> time_splits(const std::vector<RankRecord>& records);

// `records`: every rank's record (index = world rank), as gather_records gives rank 0.
Metrics compute_metrics(const RunLayout& layout, const std::vector<RankRecord>& records);

}  // namespace wiola::profile
