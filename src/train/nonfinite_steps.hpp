#pragma once
// Steps in a row whose loss or gradient norm was not finite (their updates
// are skipped); the run stops when there are --max-nonfinite-steps of them.
// Every rank sees the same sums, so every rank counts the same steps.
#include <cstdint>

namespace wiola {

class NonfiniteSteps {
 public:
  explicit NonfiniteSteps(int limit) : limit_(limit) {}
  // Counts one step; true when the run must stop.
  bool record(bool skipped) {
    in_a_row_ = skipped ? in_a_row_ + 1 : 0;
    return in_a_row_ >= limit_;
  }
  int in_a_row() const { return in_a_row_; }
  int limit() const { return limit_; }

 private:
  int limit_;
  int in_a_row_ = 0;
};

}  // namespace wiola
