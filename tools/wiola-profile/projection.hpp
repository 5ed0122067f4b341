#pragma once
// Projection: predicts step time, bubble, tokens/s and time-to-train for a
// target layout on a target cluster by running the schedule simulator with
// per-stage compute times that come from one of (docs/profiling.md,
// "Projection"):
//   * a measured profile (profile.json) of the same model: its per-stage
//     times when the target has the same partition and micro-batch size,
//     else its per-layer times (measured_profile.hpp), re-summed over the target's
//     partition and scaled by micro-batch tokens;
//   * per-stage or per-layer times given in the spec file;
//   * per-layer times from counted device work at measured ceilings
//     (counted_work.hpp);
//   * the FLOP formula at a fraction of the device's peak.
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "profile/layout.hpp"
#include "profile/metrics.hpp"
#include "wiola-profile/cluster.hpp"
#include "wiola-profile/counted_work.hpp"
#include "wiola-profile/measured_profile.hpp"
#include "wiola-profile/simulator.hpp"

namespace wiola::profile {

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
  // run.schedule = best (the default in a spec): simulate every candidate
  // schedule (candidate_schedules) and project the fastest that fits memory.
  bool pick_schedule = false;
  bool stages_given = false;      // run.stage_layers fixed the partition (of this v)
  bool recompute = false;         // run.recompute: the memory check's activations
  double device_memory_bytes = 0; // per rank; 0: the memory check is skipped
  // Share of the backward that is weight gradients (a split backward's W):
  // < 0 unknown (the simulator's kDefaultWeightShare), else times.weight_share
  // or, from a profile of a zero-bubble run, its measured W / backward.
  double weight_share = -1;
  // The data-parallel collectives overlap compute (a device transport with
  // its own stream, as NCCL): ZeRO-2's bucket reduce-scatters the last
  // backward, the parameter gather the next step's first forwards.
  bool overlap_comm = true;

  TimeSource source = TimeSource::Flops;
  std::string source_text;
  LayerTimes layer_times;                       // Layers
  std::vector<double> stage_forward_s, stage_backward_s;  // Stages, per micro-batch and VIRTUAL stage
  std::vector<double> stage_optimizer_s;        // Stages: whole stage (ZeRO sharding is applied by the simulator)
  std::vector<double> stage_other_s;            // Stages
  int times_micro_batch = 0;                    // what the given times are per (Layers, Stages)
  double optimizer_s_per_param = -1;            // Layers (< 0: from memory bandwidth)
  double other_s = 0;                           // Layers, Flops: per step and rank
  std::vector<double> message_bytes;            // optional per-(virtual-)boundary override
  // Layers from counted work (times.counts): the work per part and the ceilings.
  std::optional<CountedWork> counted;
  Ceilings ceilings;

  // When the times came from a profile of exactly this layout: what it measured.
  struct Measured {
    double step_s = 0, bubble = 0, tokens_per_s = 0;
    std::vector<double> stage_bubble;
  };
  std::optional<Measured> measured;
  std::vector<std::string> ignored_keys;  // keys given that nothing read (unknown keys are errors)
};

// Reads a projection spec: `file` is an INI spec or a profile.json (then the
// target defaults to the profiled run on this machine's measured link);
// `assignments` ("section.key=value") override it. Throws wiola::Error.
ProjectionSpec load_projection(const std::string& file, const std::vector<std::string>& assignments);
// The same from a profile in memory (a run just made): its own layout on its
// measured link, unless `assignments` say otherwise.
ProjectionSpec projection_from_profile(const MeasuredProfile& profile,
                                       const std::vector<std::string>& assignments);

// The simulator's input for the spec.
SimInput simulator_input(const ProjectionSpec& spec);

// One schedule tried by run.schedule = best.
struct ScheduleCandidate {
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::OneFOneB;
  int chunks = 1;
  bool ran = false;               // false: not possible here (see note)
  std::string note;               // why not, or a remark
  double step_s = 0, bubble = 0, tokens_per_s = 0;
  int peak_in_flight = 0;         // the most micro-batches (x chunks) a rank holds
  double memory_bytes = 0;        // the largest rank's estimate (0: not estimated)
  bool fits = true;
};

// The schedules run.schedule = best compares: 1f1b; interleaved with 2
// chunks (when the layout allows it); zb-h1; zb-h2. With pp = 1 only 1f1b
// (they coincide).
std::vector<std::pair<pipeline::ScheduleKind, int>> candidate_schedules(int pp);

// The largest rank's memory estimate for the spec's layout and schedule
// (train/memory_plan.hpp per chunk, with the schedule's peak in-flight
// micro-batches from pipeline::check_schedules), and that peak.
struct MemoryCheck {
  double bytes = 0;
  int peak_in_flight = 0;
};
MemoryCheck projected_memory(const ProjectionSpec& spec);

struct Projection {
  ProjectionSpec spec;
  std::vector<ScheduleCandidate> candidates;  // run.schedule = best: every one tried
  std::string choice;                          // why the projected schedule was chosen
  MemoryCheck memory;
  SimInput input;
  SimResult sim;
  Metrics metrics;          // the simulated records through compute_metrics
  double budget_tokens = 0; // 0 when no budget was given
  double time_to_train_s = 0;
};

Projection project(const ProjectionSpec& spec);

}  // namespace wiola::profile
