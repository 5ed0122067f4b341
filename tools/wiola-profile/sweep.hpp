#pragma once
// --sweep: profiles several layouts inside one allocation (one mpirun) and
// ranks them by throughput. Each point is a full profile (warm-up and
// measured steps of train()); PP must divide the world size, DP = world / PP.
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "profile/link_probe.hpp"
#include "profile/peak.hpp"
#include "train/options.hpp"

namespace wiola::profile {

struct SweepSpec {
  std::vector<int> pp;            // empty: every divisor of the world size up to L
  std::vector<int> micro_batch;   // empty: the options' --micro-batch
  std::vector<int> microbatches;  // per replica; empty: keep --global-batch fixed
  std::vector<int> zero;          // empty: the options' --zero
  // Schedule names, "interleaved:V" for V chunks per stage ("interleaved":
  // --virtual-stages, at least 2); empty: the options' --schedule.
  std::vector<std::string> schedule;
};

struct SweepPoint {
  int pp = 1, dp = 1, micro_batch = 1, microbatches = 1, global_batch = 1, zero = 0;
  std::string schedule;    // as listed ("interleaved:2" with chunks)
  int virtual_stages = 1;  // chunks per stage (interleaved)
  std::string describe() const;  // "pp 2 dp 1 mb 4 m 4 zero 0 1f1b"
};

struct SweepRow {
  SweepPoint point;
  bool ok = false;
  std::string error;  // why the trainer refused the point
  double step_s = 0, tokens_per_s = 0, mfu = 0, bubble = 0, bubble_theory = 0;
  double peak_rss_bytes = 0;
  // The simulator's prediction of this point from its own per-stage times.
  double predicted_step_s = 0, predicted_bubble = 0;
};

// A --sweep-schedule item: the schedule and its chunks per stage (`fallback`
// chunks for a bare "interleaved", at least 2). Throws wiola::Error on a bad item.
std::pair<pipeline::ScheduleKind, int> parse_sweep_schedule(const std::string& item, int fallback);

// The points of the sweep; combinations that cannot exist (PP not dividing
// the world, a global batch not divisible) are listed in `skipped`.
std::vector<SweepPoint> sweep_points(const TrainOptions& base, const SweepSpec& spec, int world,
                                     std::vector<std::string>& skipped);

// Collective. Rows (rank 0 only) in sweep order; `progress` gets a line per point (rank 0).
std::vector<SweepRow> run_sweep(const TrainOptions& base, const std::vector<SweepPoint>& points,
                                int warmup, int measured, comm::Communicator& world,
                                const std::string& host, const PeakFlops& peak,
                                const LinkProbe& link, std::ostream& progress);

}  // namespace wiola::profile
