#pragma once
// What a logged step line reports since the line before: the mean loss over
// the steps since the last multiple of --log-interval, counted in absolute
// steps (a resumed run takes the part of the window its checkpoint saved, so
// it prints what an uninterrupted run prints), and this process's throughput
// since the previous line.
#include <algorithm>
#include <chrono>
#include <cstdint>

#include "io/checkpoint_manifest.hpp"  // LossWindow

namespace wiola {

class LogWindow {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogWindow(int log_interval) : interval_(log_interval) {}

  // The loss part a checkpoint saved.
  void restore(const LossWindow& losses) { losses_ = losses; }
  const LossWindow& losses() const { return losses_; }
  void start_clock() { since_ = Clock::now(); }

  // One step's mean loss and the tokens it trained on.
  void add(double loss, double tokens) {
    losses_.sum += loss;
    ++losses_.steps;
    tokens_ += tokens;
  }
  bool boundary(std::int64_t step) const { return step % interval_ == 0; }
  double tokens_per_second(Clock::time_point now) const {
    return tokens_ / std::max(std::chrono::duration<double>(now - since_).count(), 1e-9);
  }
  // After a printed line: the throughput window restarts, and the loss
  // window too at a boundary.
  void printed(bool at_boundary) {
    since_ = Clock::now();
    tokens_ = 0;
    if (at_boundary) losses_ = {};
  }

 private:
  int interval_;
  LossWindow losses_;
  double tokens_ = 0;
  Clock::time_point since_ = Clock::now();
};

}  // namespace wiola
