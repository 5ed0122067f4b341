#pragma once
// What a projection takes from a measured profile: the profiled run's layout,
// link and peak, its per-stage times and the per-layer times derived from
// them. Built from a run just made (a sweep point: no file in between) or read
// back from the profile.json a run wrote (--project prof/profile.json).
#include <string>
#include <vector>

#include "profile/layout.hpp"
#include "profile/link_probe.hpp"
#include "profile/metrics.hpp"
#include "profile/profile_run.hpp"
#include "wiola-profile/files.hpp"

namespace wiola::profile {

// Forward and backward seconds of one part of the model, per micro-batch.
struct PartTimes {
  double forward_s = 0, backward_s = 0;
};

// Per-layer times of one micro-batch of `micro_batch` sequences.
struct LayerTimes {
  int micro_batch = 0;
  std::vector<PartTimes> layers;  // index = layer
  PartTimes embed;                // input embedding (first stage)
  PartTimes head;                 // final norm, tied head and loss (last stage)
};

// Splits each measured stage's forward and backward time over its layers and
// (last stage) the head in proportion to their training FLOPs (the one
// formula, model/flops.hpp). The embedding lookup has no FLOPs, so its small
// memory-bound time stays with the first stage's layers, and the head's share
// carries the final norm and the loss.
LayerTimes derive_layer_times(const RunLayout& layout, const std::vector<StageMetrics>& stages);
// Measured optimizer seconds per parameter a rank updates (its shard under
// ZeRO >= 1), averaged over ranks.
double optimizer_seconds_per_param(const RunLayout& layout, const Metrics& metrics);

// One stage of a profile (means over its replicas).
struct MeasuredStage {
  double forward_s = 0, backward_s = 0;  // per micro-batch, waits excluded
  double optimizer_s = 0;                // per step: the replica's (its shard under ZeRO >= 1)
  double outside_s = 0;                  // per step, inside no action
  double bubble = 0;
  double weight_s = 0;                   // of backward_s, a split backward's W (0: not split)
};

struct MeasuredProfile {
  RunLayout layout;
  LinkProbe link;                     // rank 0 <-> 1
  double peak_flops = 0;              // mean over ranks, per rank (FLOP/s)
  std::vector<MeasuredStage> stages;  // index = stage
  LayerTimes layer_times;
  double optimizer_s_per_param = 0;
  double step_s = 0, bubble = 0, tokens_per_s = 0;  // overall
};

// From a run just made (rank 0's result).
MeasuredProfile measured_profile(const ProfileResult& r);
// From a profile.json document; throws wiola::Error naming `origin`.
MeasuredProfile measured_profile_from_json(const Json& profile, const std::string& origin);
// Reads the profile.json file at `path`.
MeasuredProfile read_measured_profile(const std::string& path);

Json layer_times_json(const LayerTimes& t);

}  // namespace wiola::profile
