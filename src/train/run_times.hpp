#pragma once
// A run's step times: the first step's apart (it warms caches and allocators
// up) from the steady steps after it, and the tokens per second over those.
// A run of one step has only the first to report.
#include <chrono>
#include <cstdint>

#include "pipeline/time_split.hpp"

namespace wiola {

class RunTimes {
 public:
  using Clock = std::chrono::steady_clock;

  void start() { start_ = steady_from_ = Clock::now(); }
  // One step's split, the run's first step or a later one.
  void add(bool first_step, const TimeSplit& t) {
    if (first_step) {
      steady_from_ = Clock::now();
      first_ = t;
    } else {
      steady_ += t;
      ++steady_steps_;
    }
  }
  double elapsed(Clock::time_point now) const { return seconds(start_, now); }
  std::int64_t steady_steps() const { return steady_steps_; }
  // Summed over the steady steps, or the first step's when it is the only one.
  const TimeSplit& split() const { return steady_steps_ > 0 ? steady_ : first_; }
  // Over the steady steps, or the first step when it is the only one.
  double tokens_per_second(double tokens_per_step) const {
    if (steady_steps_ > 0)
      return double(steady_steps_) * tokens_per_step / seconds(steady_from_, Clock::now());
    return tokens_per_step / seconds(start_, steady_from_);
  }

 private:
  static double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  Clock::time_point start_ = Clock::now(), steady_from_ = start_;
  TimeSplit first_, steady_;
  std::int64_t steady_steps_ = 0;
};

}  // namespace wiola
