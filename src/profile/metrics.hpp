#pragma once
// Turns the gathered rank records of a profiled run into the numbers users
// choose layouts by (docs/profiling.md, "Metrics"): per rank, per stage and
// overall, the time split of a step and the bubble (pipeline/time_split.hpp: the
// definitions wiola-train shares), tokens/s, model FLOP/s and MFU against the
// peak.
//
// Where the split comes from: compute, wait and comm are the executor's
// (StageExecutor::Result::times); the trainer's two phases (ReduceGrads, OptimizerStep) are
// divided on the ranks' aligned timeline: the time a rank sat in them before
// its partners in the reduction, or every rank at the optimizer's norm
// all-reduce, had arrived is drain (taken first from completing sends, which
// the executor counted as comm); other is the rest of the step's wall time.
#include <string>
#include <vector>

#include "profile/layout.hpp"
#include "profile/recorder.hpp"
#include "pipeline/time_split.hpp"

namespace wiola::profile {

struct RankMetrics {
  int rank = 0, stage = 0, dp_index = 0;
  TimeSplit t;                      // per step
  double flops_per_s = 0;           // model FLOPs of its stage x its tokens / step time
  double peak_flops = 0;
  double mfu = 0;                   // flops_per_s / peak_flops
  double compute_mfu = 0;           // the same FLOPs over compute time only
  double peak_rss_bytes = 0;
  // Per micro-batch through the rank (all its chunks), waits excluded (means);
  // backward_s includes a split backward's B and W, weight_s is W alone (0
  // for schedules that do not split the backward).
  double forward_s = 0, backward_s = 0, weight_s = 0;
  // Per step, time inside no action at all: the trainer's work between steps
  // (its per-step all-reduce of stop flags included) and between actions.
  // The rest of `other` (data loading on the first and last stage) is inside
  // Forward, so forward_s carries it.
  double outside_s = 0;
};

struct StageMetrics {
  int stage = 0;
  StageSpec spec;                   // its first chunk (the stage when v = 1)
  std::vector<StageSpec> chunks;    // all its chunks: virtual stages s, pp + s, ...
  int replicas = 0;
  TimeSplit t;                      // mean over the stage's replicas
  double tokens_per_s = 0;          // the global batch's tokens / this stage's step time
  double flops_per_s = 0;           // sum over replicas
  double peak_flops = 0;            // sum over replicas
  double mfu = 0, compute_mfu = 0;
  double peak_rss_bytes = 0;        // largest replica
  double forward_s = 0, backward_s = 0, weight_s = 0;  // per micro-batch (means over replicas)
  double outside_s = 0;                  // per step (mean over replicas)
  double message_bytes = 0;         // to the next stage, per micro-batch (all chunks)
  double train_flops_per_token = 0; // all its chunks
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
  double bubble_theory = 0;         // pipeline::theoretical_bubble(schedule, pp, m, v)
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
