#pragma once
// One profiling run: warm-up steps, then measured steps of train() with a
// StepRecorder on every rank, gathered to rank 0 and turned into metrics.
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "profile/layout.hpp"
#include "profile/link_probe.hpp"
#include "profile/metrics.hpp"
#include "profile/peak.hpp"
#include "profile/recorder.hpp"
#include "train/options.hpp"

namespace wiola::profile {

struct ProfileResult {
  RunLayout layout;
  int warmup_steps = 0, measured_steps = 0;
  PeakFlops peak;                   // this rank's (rank 0's on rank 0)
  LinkProbe link;                   // rank 0 <-> 1, when measured
  bool rss_reset = false;           // the RSS mark was reset before the run
  std::vector<RankRecord> records;  // rank 0 only; index = world rank
  Metrics metrics;                  // rank 0 only
  std::string train_log;            // what train() wrote (rank 0)
};

// The options train() gets for a profile: `warmup + measured` steps, no
// evaluation, no periodic log, no weight export, no checkpoints (neither
// resumed nor written), the dataset's vocabulary
// resolved (so the FLOP count matches what trains). Every rank calls it.
TrainOptions profile_train_options(const TrainOptions& opts, int warmup, int measured);

// Collective over `world`. `peak` and `link` come from measure_peak /
// probe_link (once per job). Throws CollectiveError (every rank) for a
// configuration the trainer refuses.
ProfileResult run_profile(const TrainOptions& opts, int warmup, int measured,
                          comm::Communicator& world, const std::string& host,
                          const PeakFlops& peak, const LinkProbe& link);

// Rank 0 <-> rank 1 ping-pong with `bytes` (a no-op on one rank). Collective.
LinkProbe probe_world_link(comm::Communicator& world, std::size_t bytes);

}  // namespace wiola::profile
