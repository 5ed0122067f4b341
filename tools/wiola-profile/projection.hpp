#pragma once
// Projection: predicts step time, bubble, tokens/s and time-to-train for a
// target layout on a target cluster by running the schedule simulator with
// per-stage compute times that come from one of (docs/profiling.md,
// "Projection"):
//   * a measured profile (profile.json) of the same model: its per-stage
//     times when the target has the same partition and micro-batch size,
//     else its per-layer times (derived below), re-summed over the target's
//     partition and scaled by micro-batch tokens;
//   * per-stage or per-layer times given in the spec file;
//   * the FLOP formula at a fraction of the device's peak.
#include <optional>
#include <string>
#include <vector>

#include "profile/json.hpp"
#include "profile/layout.hpp"
#include "profile/metrics.hpp"
#include "wiola-profile/cluster.hpp"
#include "wiola-profile/simulator.hpp"

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
Json layer_times_json(const LayerTimes& t);
// Measured optimizer seconds per parameter a rank updates (its shard under
// ZeRO >= 1), averaged over ranks.
double optimizer_seconds_per_param(const RunLayout& layout, const Metrics& metrics);
LayerTimes layer_times_from_json(const Json& j);

enum class TimeSource { Flops, Layers, Stages };

struct ProjectionSpec {
  RunLayout layout;  // the target
  Cluster cluster;
  int nodes = 1;
  double peak_flops = 0;  // per rank (FLOP/s): MFU, and FLOP-derived times
  std::string peak_source;
  double efficiency = 0.5;        // FLOP-derived times: fraction of peak the layers reach
  double memory_Bps = 0;          // FLOP-derived optimizer time: bytes / memory bandwidth
  double optimizer_bytes_per_param = 32;
  double activation_bytes = 4;    // per boundary element on the wire
  double grad_bytes = 4;          // per gradient element in the data-parallel reduction
  double param_bytes = 4;         // per parameter in the ZeRO all-gather
  std::string train_tokens;       // "", a number, or "chinchilla"

  TimeSource source = TimeSource::Flops;
  std::string source_text;
  LayerTimes layer_times;                       // Layers
  std::vector<double> stage_forward_s, stage_backward_s;  // Stages, per micro-batch
  std::vector<double> stage_optimizer_s;        // Stages: whole stage (ZeRO sharding is applied by the simulator)
  std::vector<double> stage_other_s;            // Stages
  int times_micro_batch = 0;                    // what the given times are per (Layers, Stages)
  double optimizer_s_per_param = -1;            // Layers (< 0: from memory bandwidth)
  double other_s = 0;                           // Layers, Flops: per step and rank
  std::vector<double> message_bytes;            // optional per-boundary override

  // When the times came from a profile of exactly this layout: what it measured.
  struct Measured {
    double step_s = 0, bubble = 0, tokens_per_s = 0;
    std::vector<double> stage_bubble;
  };
  std::optional<Measured> measured;
  std::vector<std::string> ignored_keys;  // keys of the spec nobody read (typos)
};

// Reads a projection spec: `file` is an INI spec or a profile.json (then the
// target defaults to the profiled run on this machine's measured link);
// `assignments` ("section.key=value") override it. Throws wiola::Error.
ProjectionSpec load_projection(const std::string& file, const std::vector<std::string>& assignments);
// The same from a profile record in memory (profile_json of a run just made).
ProjectionSpec projection_from_profile(const Json& profile,
                                       const std::vector<std::string>& assignments);

// The simulator's input for the spec.
SimInput simulator_input(const ProjectionSpec& spec);

struct Projection {
  ProjectionSpec spec;
  SimInput input;
  SimResult sim;
  Metrics metrics;          // the simulated records through compute_metrics
  double budget_tokens = 0; // 0 when no budget was given
  double time_to_train_s = 0;
};

Projection project(const ProjectionSpec& spec);

}  // namespace wiola::profile
