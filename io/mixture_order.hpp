#pragma once
// The global sample order over a dataset of one or more components
// (data_sources.hpp): sample g -> global window index, a pure function of
// (seed, g). No state, the same on every rank for any data-parallel degree,
// and resumable from any sample index.
//
// One component: exactly SampleOrder(seed, n) (epoch e = g / n, a seeded
// permutation per epoch).
//
// Several weighted components: samples come in blocks of B (default 1024).
// Component i gets c_i slots of every block, c_i = B * w_i / sum(w) rounded by
// largest remainder (ties to the earlier component), so over any run of whole
// blocks the counts follow the weights to within 1/B, and a component whose
// share rounds to 0 is an error. Block b's slots are shuffled by a seeded
// permutation of [0, B) (SampleOrder keyed by the block), slot s lands at p =
// perm_b(s), and the components own consecutive ranges of p in order. Position
// p in component i's range is that component's local sample k = b * c_i +
// (p - start_i), and its window is component i's own SampleOrder(seed_i, n_i)
// at k (seed_i = splitmix64(seed XOR splitmix64(i + 1))). A component
// therefore walks its own epochs at its own pace: a small, heavily weighted
// one repeats sooner.
#include <cstdint>
#include <vector>

#include "io/sample_order.hpp"

namespace wiola {

inline constexpr std::int64_t kDefaultMixBlock = 1024;

class MixtureOrder {
 public:
  // windows[i] windows in component i, which start at global window
  // first_window[i]; weights empty for one component.
  MixtureOrder(std::uint64_t seed, std::vector<std::int64_t> first_window,
               std::vector<std::int64_t> windows, std::vector<double> weights,
               std::int64_t block = kDefaultMixBlock);

  std::int64_t window(std::int64_t global_sample) const;
  // Which component sample g comes from, and its index within that component.
  struct Draw {
    std::size_t component = 0;
    std::int64_t local = 0;
  };
  Draw draw(std::int64_t global_sample) const;

  std::size_t num_components() const { return orders_.size(); }
  std::int64_t block() const { return block_; }
  std::int64_t slots_per_block(std::size_t c) const { return counts_.at(c); }
  // How many times component c has been read through after `samples` samples.
  double epochs(std::size_t c, std::int64_t samples) const;

 private:
  std::vector<SampleOrder> orders_;
  std::vector<std::int64_t> first_, counts_, starts_;  // starts_: prefix sums of counts_
  std::int64_t block_ = 1;
  SampleOrder slots_;  // shuffles the slots of each block
};

// The largest-remainder apportionment of `total` slots to `weights`.
std::vector<std::int64_t> apportion(std::int64_t total, const std::vector<double>& weights);

}  // namespace wiola
