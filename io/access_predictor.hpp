#pragma once
// Guesses which sample ranges a reader will ask for next, so they can be read
// ahead (prefetcher.hpp). A data-parallel rank reads, per step, a contiguous
// run of `span` samples at the same offset of every `period` samples (train:
// span = global batch / dp, period = global batch; evaluation: one
// micro-batch every dp micro-batches); the trainer tells the predictor that
// pattern (BatchFeed::set_access_pattern). Untold, it assumes contiguous
// reads. A wrong guess only costs a read.
#include <cstdint>
#include <vector>

namespace wiola {

class AccessPredictor {
 public:
  void observe(std::int64_t first, int count);
  // The first sample of each of the next n requests (each of the last count).
  std::vector<std::int64_t> predict(int n) const;
  // The reader takes samples [s*period + offset, s*period + offset + span) for
  // s = 0, 1, ...; 0 < span <= period.
  void set_pattern(std::int64_t period, std::int64_t offset, std::int64_t span);

 private:
  std::int64_t last_first_ = -1;
  int last_count_ = 0;
  std::int64_t run_start_ = 0;  // first sample of the current run (told pattern)
  std::int64_t span_ = 0, period_ = 0, offset_ = 0;
  bool told_ = false;
};

}  // namespace wiola
