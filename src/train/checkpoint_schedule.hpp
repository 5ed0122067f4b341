#pragma once
// When a run writes a checkpoint and when it stops after one, from the
// checkpoint options: on a stop signal, after --exit-after-step, every
// --save-minutes (the clock restarts at each save), at the last step and
// every --save-interval steps; never without --save.
#include <chrono>
#include <cstdint>

#include "train/options.hpp"

namespace wiola {

class CheckpointSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  explicit CheckpointSchedule(const CheckpointOptions& options) : options_(options) {}

  // The clock of --save-minutes starts (or restarts, after a save) now.
  void restart_clock() { last_save_ = Clock::now(); }
  // --save-minutes have passed since the clock started (this rank's clock;
  // the trainer agrees on it over all ranks).
  bool time_due() const {
    return options_.save_minutes > 0 &&
           std::chrono::duration<double>(Clock::now() - last_save_).count() >=
               60.0 * options_.save_minutes;
  }
  bool exit_after(std::int64_t step) const {
    return options_.exit_after_step > 0 && step == options_.exit_after_step;
  }
  // Whether `step` is saved, given a stop signal, the agreed time_due() and
  // the run's last step.
  bool save_after(std::int64_t step, bool stopping, bool time_due, std::int64_t last_step) const {
    return !options_.save_dir.empty() &&
           (stopping || exit_after(step) || time_due || step == last_step ||
            (options_.save_interval > 0 && step % options_.save_interval == 0));
  }

 private:
  const CheckpointOptions& options_;
  Clock::time_point last_save_ = Clock::now();
};

}  // namespace wiola
