#include "io/mixture_order.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace wiola {

std::vector<std::int64_t> apportion(std::int64_t total, const std::vector<double>& weights) {
  require(total > 0 && !weights.empty(), "apportion: nothing to share");
  double sum = 0;
  for (double w : weights) {
    require(std::isfinite(w) && w > 0, "mixing weight ", w, " must be a finite number > 0");
    sum += w;
  }
  std::vector<std::int64_t> counts(weights.size());
  std::vector<double> rest(weights.size());
  std::int64_t used = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double q = static_cast<double>(total) * weights[i] / sum;
    counts[i] = static_cast<std::int64_t>(std::floor(q));
    rest[i] = q - static_cast<double>(counts[i]);
    used += counts[i];
  }
  std::vector<std::size_t> order(weights.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rest[a] > rest[b]; });
  for (std::size_t k = 0; used < total; ++k, ++used) ++counts[order[k % order.size()]];
  return counts;
}

MixtureOrder::MixtureOrder(std::uint64_t seed, std::vector<std::int64_t> first_window,
                           std::vector<std::int64_t> windows, std::vector<double> weights,
                           std::int64_t block)
    : first_(std::move(first_window)),
      block_(windows.size() == 1 ? 1 : std::max<std::int64_t>(block, 1)),
      slots_(splitmix64(seed ^ 0x6d69782d626c6f63ull), block_) {
  require(!windows.empty() && windows.size() == first_.size(),
          "sample order: component lists disagree");
  require(block > 0, "sample order: the mixing block must be positive, got ", block);
  if (windows.size() == 1) {
    orders_.emplace_back(seed, windows[0]);
    counts_ = {1};
    starts_ = {0};
    return;
  }
  require(weights.size() == windows.size(), "sample order: ", weights.size(), " weights for ",
          windows.size(), " components");
  counts_ = apportion(block_, weights);
  double sum = 0;
  for (double w : weights) sum += w;
  for (std::size_t i = 0; i < windows.size(); ++i) {
    require(counts_[i] > 0, "dataset component ", i, " (weight ", weights[i], " of ", sum,
            ") would get no sample in a mixing block of ", block_,
            "; raise its weight or the block size");
    orders_.emplace_back(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(i) + 1)),
                         windows[i]);
  }
  starts_.resize(counts_.size());
  std::exclusive_scan(counts_.begin(), counts_.end(), starts_.begin(), std::int64_t{0});
}

MixtureOrder::Draw MixtureOrder::draw(std::int64_t g) const {
  require(g >= 0, "sample order: negative sample index ", g);
  if (orders_.size() == 1) return {0, g};
  const std::int64_t b = g / block_, s = g % block_;
  const std::int64_t p = slots_.permute(b, s);
  const auto c = static_cast<std::size_t>(
      std::upper_bound(starts_.begin(), starts_.end(), p) - starts_.begin() - 1);
  return {c, b * counts_[c] + (p - starts_[c])};
}

std::int64_t MixtureOrder::window(std::int64_t g) const {
  const Draw d = draw(g);
  return first_[d.component] + orders_[d.component].window(d.local);
}

double MixtureOrder::epochs(std::size_t c, std::int64_t samples) const {
  const double per_sample = static_cast<double>(counts_.at(c)) / static_cast<double>(block_);
  return static_cast<double>(samples) * per_sample / static_cast<double>(orders_[c].n_windows());
}

}  // namespace wiola
