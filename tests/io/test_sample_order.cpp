#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "io/sample_order.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

std::vector<std::int64_t> epoch(const SampleOrder& o, std::int64_t e) {
  std::vector<std::int64_t> out;
  for (std::int64_t j = 0; j < o.n_windows(); ++j) out.push_back(o.window(e * o.n_windows() + j));
  return out;
}

TEST(SampleOrder, IsABijectionEachEpoch) {
  for (std::int64_t n : {1, 2, 3, 7, 16, 17, 1000, 4097}) {
    for (std::uint64_t seed : {0ull, 1ull, 1234567ull}) {
      const SampleOrder o(seed, n);
      for (std::int64_t e = 0; e < 3; ++e) {
        std::vector<std::int64_t> p = epoch(o, e);
        std::sort(p.begin(), p.end());
        for (std::int64_t i = 0; i < n; ++i)
          ASSERT_EQ(p[static_cast<std::size_t>(i)], i) << "n " << n << " seed " << seed;
      }
    }
  }
}

TEST(SampleOrder, IsPure) {
  const SampleOrder a(42, 1000);
  std::vector<std::int64_t> samples(3000);
  std::iota(samples.begin(), samples.end(), 0);
  std::vector<std::int64_t> in_order;
  for (auto g : samples) in_order.push_back(a.window(g));
  std::shuffle(samples.begin(), samples.end(), std::mt19937_64(7));
  const SampleOrder b(42, 1000);  // a fresh object, queried out of order
  for (auto g : samples) EXPECT_EQ(b.window(g), in_order[static_cast<std::size_t>(g)]);
  EXPECT_EQ(a.window(2500), a.permute(2, 500));
}

TEST(SampleOrder, DiffersBySeedAndEpoch) {
  const SampleOrder a(1, 1000), b(2, 1000);
  const auto a0 = epoch(a, 0), a1 = epoch(a, 1), b0 = epoch(b, 0);
  const auto differing = [](const auto& x, const auto& y) {
    std::int64_t d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) d += x[i] != y[i];
    return d;
  };
  EXPECT_GT(differing(a0, b0), 900);
  EXPECT_GT(differing(a0, a1), 900);
  std::vector<std::int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_GT(differing(a0, identity), 900);
}

TEST(SampleOrder, DataParallelSharesCoverTheGlobalBatch) {
  const std::int64_t n = 1000, batch = 48;
  const SampleOrder order(99, n);
  for (std::int64_t step = 0; step < 50; ++step) {  // crosses two epoch boundaries
    std::vector<std::int64_t> single;
    for (std::int64_t i = 0; i < batch; ++i) single.push_back(order.window(step * batch + i));
    std::sort(single.begin(), single.end());
    for (std::int64_t dp : {1, 2, 4}) {
      std::vector<std::int64_t> merged;
      for (std::int64_t rank = 0; rank < dp; ++rank) {
        const SampleOrder own(99, n);  // each rank builds its own
        const std::int64_t share = batch / dp, first = step * batch + rank * share;
        for (std::int64_t i = 0; i < share; ++i) merged.push_back(own.window(first + i));
      }
      std::sort(merged.begin(), merged.end());
      EXPECT_EQ(merged, single) << "step " << step << " dp " << dp;
    }
  }
}

TEST(SampleOrder, Errors) {
  EXPECT_ERROR(SampleOrder(1, 0), "no windows");
  const SampleOrder o(1, 10);
  EXPECT_ERROR(o.window(-1), "negative");
}

}  // namespace
}  // namespace wiola
