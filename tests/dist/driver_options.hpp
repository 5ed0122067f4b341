#pragma once
// The run the multi-rank test drivers share: wiola-tiny (L = 5, so stage
// boundaries fall after layer 0 and elsewhere) with ATM merging (tau = 0), on
// the embedded data, 8 sequences per step in micro-batches of 2.
#include "train/options.hpp"

namespace wiola::test {

inline TrainOptions tiny_distributed_run(std::int64_t steps, double warmup_frac) {
  TrainOptions o;
  o.model.config = preset("wiola-tiny");
  o.model.config.atm = AtmMode::Causal;
  o.model.config.tau = 0.0;
  o.data.train_files = {WIOLA_EMBEDDED_TRAIN_FILE};
  o.parallel.micro_batch = 2;
  o.parallel.global_batch = 8;
  o.optimizer.steps = steps;
  o.optimizer.lr = 1e-2;
  o.optimizer.warmup_frac = warmup_frac;
  o.logging.eval_interval = 0;
  o.logging.log_interval = 1;
  o.parallel.comm_timeout = 120;
  return o;
}

}  // namespace wiola::test
