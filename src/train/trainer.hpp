#pragma once
// The training run: one rank's part of the PP x DP grid. The one-process run is
// the pp = dp = 1 case of the same code.
#include <iosfwd>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "train/options.hpp"

namespace wiola {

struct TrainSummary {
  std::int64_t steps = 0;
  double first_loss = 0, last_loss = 0;
  double last_val_loss = -1;
  double tokens_per_second = 0;
};

// Runs the whole training described by `opts` on this rank. Rank 0 writes the
// log to `log`. Throws wiola::Error for bad input; the caller decides whether
// the error is collective (every rank throws) or must abort the job.
TrainSummary train(const TrainOptions& opts, comm::Communicator& world, const std::string& host,
                   std::ostream& log);

}  // namespace wiola
