#pragma once
// The training run: one rank's part of the PP x DP grid. The one-process run is
// the pp = dp = 1 case of the same code.
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "pipeline/stage_executor.hpp"
#include "train/options.hpp"
#include "pipeline/time_split.hpp"
#include "train/train_observer.hpp"

namespace wiola {

struct TrainSummary {
  std::int64_t first_step = 1;  // > 1 when the run resumed from a checkpoint
  std::int64_t steps = 0;       // the last step taken
  bool completed = false;       // reached the configured number of steps
  int stop_signal = 0;          // the signal that stopped the run early, if any
  std::string last_checkpoint;  // directory of the last checkpoint written or loaded
  std::vector<double> losses;  // mean training loss of every step
  double first_loss = 0, last_loss = 0;
  double last_val_loss = -1;
  // Over steps 2..N (step 1 warms caches and allocators up), all ranks.
  double tokens_per_second = 0;
  // Per stage, averaged over its data-parallel replicas, summed over steps
  // 2..N (every rank receives them); the drain aligned over ranks (align_drains).
  std::vector<TimeSplit> stage_times;
  std::vector<StageSpec> stages;  // the partition the run used
};

// Runs the whole training described by `opts` on this rank. Rank 0 writes the
// log to `log`. Throws wiola::Error for bad input; the caller decides whether
// the error is collective (every rank throws) or must abort the job.
TrainSummary train(const TrainOptions& opts, comm::Communicator& world, const std::string& host,
                   std::ostream& log, TrainObserver* observer = nullptr);

}  // namespace wiola
