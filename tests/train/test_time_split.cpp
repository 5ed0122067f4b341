// The time split and the bubble shared by wiola-train and wiola-profile
// (pipeline/time_split.hpp), and how wiola-train finds its drain without a
// common clock (align_drains).
#include <gtest/gtest.h>

#include "pipeline/time_split.hpp"

namespace wiola {
namespace {

double parts(const TimeSplit& t) {
  return t.compute + t.wait + t.drain + t.comm + t.reduce + t.optimizer + t.other;
}

TEST(TimeSplit, BubbleIsWaitAndDrainOverTheStep) {
  const TimeSplit t{.compute = 6, .wait = 1, .drain = 0.5, .comm = 0.5, .reduce = 1,
                    .optimizer = 0.5, .other = 0.5, .step = 10};
  EXPECT_DOUBLE_EQ(t.bubble(), 0.15);
  EXPECT_EQ(TimeSplit{}.bubble(), 0.0);
  TimeSplit sum = t;
  sum += t;
  EXPECT_DOUBLE_EQ(sum.scaled(0.5).bubble(), 0.15);
  EXPECT_DOUBLE_EQ(parts(sum), 2 * parts(t));
}

TEST(TimeSplit, AlignDrainsCountsTheWaitForTheLastRank) {
  // The end of a 1F1B step over three stages, as each rank measures it alone.
  // Stage 0 finishes its backwards last. The last stage got to the reduction
  // 1.0 s earlier and waited there for stage 0 (the tied embedding), then both
  // summed it (0.2 s); the middle stage got there 0.5 s earlier, has nothing
  // to reduce and waited in the norm all-reduce (0.05 s) for both.
  std::vector<TimeSplit> ranks(3);
  ranks[0] = {.compute = 8, .drain = 0.05, .reduce = 0.2, .step = 10};
  ranks[1] = {.compute = 7, .wait = 1.5, .drain = 0.5 + 0.2 + 0.05, .reduce = 0, .step = 10};
  ranks[2] = {.compute = 7.5, .drain = 0.05, .reduce = 1.0 + 0.2, .step = 10};
  std::vector<double> before;
  for (TimeSplit& t : ranks) {
    t.optimizer = 0.3;
    t.other = t.step - parts(t);
    before.push_back(parts(t));
  }
  align_drains(ranks);
  EXPECT_NEAR(ranks[0].drain, 0.0, 1e-12);
  EXPECT_NEAR(ranks[1].drain, 0.5, 1e-12);
  EXPECT_NEAR(ranks[2].drain, 1.0, 1e-12);
  // The all-reduce's own cost stays optimizer time; the wait in the reduction is taken out of it.
  EXPECT_NEAR(ranks[0].optimizer, 0.35, 1e-12);
  EXPECT_NEAR(ranks[1].optimizer, 0.3 + 0.25, 1e-12);
  EXPECT_NEAR(ranks[2].reduce, 1.2 - 0.95, 1e-12);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    EXPECT_NEAR(parts(ranks[r]), before[r], 1e-12);
    EXPECT_GE(ranks[r].reduce, 0.0);
  }
  EXPECT_NEAR(ranks[2].bubble(), 0.1, 1e-12);
  // One rank alone waits for nobody.
  std::vector<TimeSplit> one{ranks[0]};
  one[0].drain = 0.05;
  align_drains(one);
  EXPECT_EQ(one[0].drain, 0.0);
}

}  // namespace
}  // namespace wiola
