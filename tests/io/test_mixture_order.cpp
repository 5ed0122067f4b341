// The sample order with mixing weights: counts per component follow the
// weights, each component walks its own permutations, and the order is a pure
// function of (seed, sample index): the same for every data-parallel degree
// and after a restart.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "io/mixture_order.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

TEST(Mixture, LargestRemainderApportionment) {
  EXPECT_EQ(apportion(10, {1, 1, 1}), (std::vector<std::int64_t>{4, 3, 3}));
  EXPECT_EQ(apportion(1024, {0.7, 0.3}), (std::vector<std::int64_t>{717, 307}));
  EXPECT_EQ(apportion(8, {1, 2, 5}), (std::vector<std::int64_t>{1, 2, 5}));
  EXPECT_EQ(apportion(3, {5, 1, 1}), (std::vector<std::int64_t>{2, 1, 0}));
  EXPECT_ERROR(apportion(4, {1, -1}), "must be a finite number > 0");
}

TEST(Mixture, OneComponentIsTheUnweightedOrder) {
  const SampleOrder plain(77, 1234);
  const MixtureOrder mixed(77, {0}, {1234}, {});
  for (std::int64_t g = 0; g < 5000; g += 7) EXPECT_EQ(mixed.window(g), plain.window(g));
}

TEST(Mixture, EveryBlockHoldsTheApportionedCounts) {
  const MixtureOrder o(5, {0, 100, 150}, {100, 50, 1000}, {0.5, 0.3, 0.2}, 64);
  EXPECT_EQ(o.slots_per_block(0), 32);
  EXPECT_EQ(o.slots_per_block(1), 19);
  EXPECT_EQ(o.slots_per_block(2), 13);
  for (std::int64_t b = 0; b < 20; ++b) {
    std::int64_t counts[3] = {0, 0, 0};
    for (std::int64_t s = 0; s < 64; ++s) {
      const std::int64_t w = o.window(b * 64 + s);
      counts[w < 100 ? 0 : w < 150 ? 1 : 2]++;
    }
    EXPECT_EQ(counts[0], 32);
    EXPECT_EQ(counts[1], 19);
    EXPECT_EQ(counts[2], 13);
  }
}

TEST(Mixture, WeightsAreRespectedOverManySamples) {
  const std::vector<double> weights = {0.6, 0.25, 0.1, 0.05};
  const std::vector<std::int64_t> windows = {10000, 300, 7, 5000};
  const std::vector<std::int64_t> first = {0, 10000, 10300, 10307};
  const MixtureOrder o(2024, first, windows, weights);
  const std::int64_t n = 196 * kDefaultMixBlock;  // whole blocks
  std::vector<std::int64_t> counts(4, 0);
  std::map<std::int64_t, std::int64_t> small;  // visits of component 2's windows
  for (std::int64_t g = 0; g < n; ++g) {
    const std::int64_t w = o.window(g);
    const auto c = static_cast<std::size_t>(std::upper_bound(first.begin(), first.end(), w) - first.begin() - 1);
    ASSERT_LT(w - first[c], windows[c]);
    ++counts[c];
    if (c == 2) ++small[w];
  }
  for (std::size_t c = 0; c < 4; ++c)
    EXPECT_NEAR(double(counts[c]) / double(n), weights[c], 0.002) << "component " << c;
  // A small, heavily drawn component cycles through all its windows evenly.
  ASSERT_EQ(small.size(), 7u);
  for (const auto& [w, k] : small) EXPECT_NEAR(double(k), double(counts[2]) / 7.0, 1.0);
  EXPECT_NEAR(o.epochs(2, n), double(counts[2]) / 7.0, 5.0);
}

TEST(Mixture, EachComponentIsAPermutationPerEpoch) {
  const MixtureOrder o(9, {0, 40}, {40, 25}, {1, 1}, 16);
  std::vector<std::vector<std::int64_t>> local(2);
  for (std::int64_t g = 0; g < 16 * 50; ++g) {
    const auto d = o.draw(g);
    local[d.component].push_back(d.local);
  }
  // Local indices run 0, 1, 2, ... in each component (in some order per block).
  for (auto& l : local) {
    std::sort(l.begin(), l.end());
    for (std::size_t i = 0; i < l.size(); ++i) ASSERT_EQ(l[i], static_cast<std::int64_t>(i));
  }
  std::vector<std::int64_t> epoch0;
  for (std::int64_t g = 0; epoch0.size() < 25; ++g) {
    const auto d = o.draw(g);
    if (d.component == 1 && d.local < 25) epoch0.push_back(o.window(g));
  }
  std::sort(epoch0.begin(), epoch0.end());
  for (std::int64_t i = 0; i < 25; ++i) EXPECT_EQ(epoch0[static_cast<std::size_t>(i)], 40 + i);
}

TEST(Mixture, SameSamplesForEveryDataParallelDegreeAndAfterRestart) {
  const std::vector<std::int64_t> first = {0, 500}, windows = {500, 80};
  const MixtureOrder order(31, first, windows, {0.8, 0.2});
  const std::int64_t batch = 48;
  for (std::int64_t step = 0; step < 60; ++step) {
    std::vector<std::int64_t> single;
    for (std::int64_t i = 0; i < batch; ++i) single.push_back(order.window(step * batch + i));
    std::sort(single.begin(), single.end());
    for (std::int64_t dp : {1, 2, 4}) {
      std::vector<std::int64_t> merged;
      for (std::int64_t rank = 0; rank < dp; ++rank) {
        const MixtureOrder own(31, first, windows, {0.8, 0.2});  // a restarted rank's own object
        const std::int64_t share = batch / dp, start = step * batch + rank * share;
        for (std::int64_t i = 0; i < share; ++i) merged.push_back(own.window(start + i));
      }
      std::sort(merged.begin(), merged.end());
      ASSERT_EQ(merged, single) << "step " << step << " dp " << dp;
    }
  }
}

TEST(Mixture, Errors) {
  EXPECT_ERROR(MixtureOrder(1, {0, 10}, {10, 10}, {1000, 1}, 64), "component 1", "no sample",
               "mixing block of 64");
  EXPECT_ERROR(MixtureOrder(1, {0, 10}, {10, 10}, {1}, 64), "1 weights for 2 components");
  EXPECT_ERROR(MixtureOrder(1, {0, 10}, {10, 10}, {1, 1}, 0), "block must be positive");
  const MixtureOrder o(1, {0}, {10}, {});
  EXPECT_ERROR(o.window(-1), "negative");
}

}  // namespace
}  // namespace wiola
