#include "io/access_predictor.hpp"

#include "core/error.hpp"

namespace wiola {

void AccessPredictor::set_pattern(std::int64_t period, std::int64_t offset, std::int64_t span) {
  require(period > 0 && span > 0 && span <= period && offset >= 0,
          "prefetch pattern: need 0 < span <= period and offset >= 0 (period ", period,
          ", offset ", offset, ", span ", span, ")");
  period_ = period;
  span_ = span;
  offset_ = offset % period;
  told_ = true;
}

void AccessPredictor::observe(std::int64_t first, int count) {
  if (told_) {
    // The run that holds `first` (or the last one that started before it).
    const std::int64_t rel = first - offset_;
    const std::int64_t s = rel >= 0 ? rel / period_ : -((-rel + period_ - 1) / period_);
    run_start_ = s * period_ + offset_;
  }
  last_first_ = first;
  last_count_ = count;
}

std::vector<std::int64_t> AccessPredictor::predict(int n) const {
  std::vector<std::int64_t> out;
  if (last_first_ < 0 || last_count_ <= 0) return out;
  std::int64_t run = run_start_, next = last_first_ + last_count_;
  for (int i = 0; i < n; ++i) {
    if (told_ && next - run >= span_) {
      run += period_;
      next = run;
    }
    out.push_back(next);
    next += last_count_;
  }
  return out;
}

}  // namespace wiola
