#pragma once
// Linear warm-up then cosine decay (paper §XIII-C), evaluated for the step
// being taken, 1-based: lr(s) = peak·s/W for s <= W, then
// min + (peak − min)·(1 + cos(π·(s − W)/(N − W)))/2, reaching `min` at s = N.
// (Starting at s = 1 keeps the first update from having lr = 0.)
#include <cmath>
#include <cstdint>

namespace wiola {

struct LrSchedule {
  double peak = 3e-4;
  double min = 0.0;
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 1;

  double at(std::int64_t step) const {
    if (warmup_steps > 0 && step <= warmup_steps)
      return peak * static_cast<double>(step) / static_cast<double>(warmup_steps);
    if (total_steps <= warmup_steps) return peak;
    const double progress = static_cast<double>(step - warmup_steps) /
                            static_cast<double>(total_steps - warmup_steps);
    const double p = progress < 0 ? 0 : (progress > 1 ? 1 : progress);
    return min + (peak - min) * 0.5 * (1.0 + std::cos(3.141592653589793 * p));
  }
};

}  // namespace wiola
