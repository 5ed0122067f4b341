// Reading ahead: the access predictor, and a prefetcher whose results are
// always what a direct read gives.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "io/prefetcher.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

using Firsts = std::vector<std::int64_t>;

TEST(AccessPredictor, ContiguousWithoutAPattern) {
  AccessPredictor p;
  EXPECT_TRUE(p.predict(2).empty());
  p.observe(0, 4);
  EXPECT_EQ(p.predict(3), (Firsts{4, 8, 12}));
  p.observe(32, 4);  // a jump is followed, not learnt from
  EXPECT_EQ(p.predict(2), (Firsts{36, 40}));
}

TEST(AccessPredictor, ToldPattern) {
  AccessPredictor p;
  p.set_pattern(32, 16, 16);  // rank 1 of 2
  p.observe(16, 8);
  EXPECT_EQ(p.predict(3), (Firsts{24, 48, 56}));
  p.observe(56, 8);
  EXPECT_EQ(p.predict(2), (Firsts{80, 88}));
  EXPECT_ERROR(p.set_pattern(8, 0, 9), "span <= period");
}

// A fetch whose value is a function of the range, counting its calls.
struct Source {
  std::atomic<int> calls{0};
  std::int64_t fail_at = -1;
  std::vector<std::int64_t> operator()(std::int64_t first, int count) {
    ++calls;
    if (first == fail_at) throw Error("bad range " + std::to_string(first));
    std::vector<std::int64_t> v;
    for (int i = 0; i < count; ++i) v.push_back(first * 1000 + i);
    return v;
  }
};

std::vector<std::int64_t> expected(std::int64_t first, int count) {
  std::vector<std::int64_t> v;
  for (int i = 0; i < count; ++i) v.push_back(first * 1000 + i);
  return v;
}

TEST(Prefetcher, ReturnsWhatADirectReadReturns) {
  for (int depth : {0, 1, 3}) {
    Source src;
    Prefetcher<std::vector<std::int64_t>> pf([&](std::int64_t f, int c) { return src(f, c); }, depth);
    // Two ranks' worth of a training pattern, an evaluation pass, and back.
    Firsts seq;
    for (int step = 0; step < 6; ++step)
      for (int mb = 0; mb < 4; ++mb) seq.push_back(step * 32 + mb * 4);
    seq.push_back(1000);
    seq.push_back(1008);
    seq.push_back(192);
    for (auto f : seq) ASSERT_EQ(pf.get(f, 4), expected(f, 4)) << "depth " << depth << " first " << f;
    const auto st = pf.stats();
    EXPECT_EQ(st.hits + st.misses, depth == 0 ? 0 : static_cast<std::int64_t>(seq.size()));
  }
}

TEST(Prefetcher, AConsumerThatComputesFindsItsBatchesReady) {
  Source src;
  Prefetcher<std::vector<std::int64_t>> pf([&](std::int64_t f, int c) { return src(f, c); }, 2);
  pf.set_pattern(32, 0, 16);  // as the trainer does: 16 samples of every 32
  int n = 0;
  for (int step = 0; step < 5; ++step)
    for (int mb = 0; mb < 4; ++mb, ++n) {
      ASSERT_EQ(pf.get(step * 32 + mb * 4, 4), expected(step * 32 + mb * 4, 4));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // "training"
    }
  // Misses: the first request (and a few when the machine is slow).
  EXPECT_GE(pf.stats().hits, n - 4);
}

TEST(Prefetcher, AnErrorReachesOnlyTheCallerOfItsRange) {
  Source src;
  src.fail_at = 8;
  Prefetcher<std::vector<std::int64_t>> pf([&](std::int64_t f, int c) { return src(f, c); }, 2);
  EXPECT_EQ(pf.get(0, 4), expected(0, 4));  // prefetches 4 and 8 (which fails)
  EXPECT_EQ(pf.get(4, 4), expected(4, 4));
  EXPECT_ERROR(pf.get(8, 4), "bad range 8");
  EXPECT_EQ(pf.get(100, 4), expected(100, 4));  // the prefetcher goes on
  // A failed prefetch nobody asks for is never reported.
  src.fail_at = 108;
  EXPECT_EQ(pf.get(104, 4), expected(104, 4));
  EXPECT_EQ(pf.get(500, 4), expected(500, 4));
}

}  // namespace
}  // namespace wiola
