// The training loop's small parts, each from its options: when a checkpoint
// is written, when non-finite steps stop the run, what a log line averages,
// where a (resumed) run is in the global sample order.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "train/checkpoint_schedule.hpp"
#include "train/log_window.hpp"
#include "train/nonfinite_steps.hpp"
#include "train/run_position.hpp"
#include "train/run_times.hpp"

namespace wiola {
namespace {

TEST(CheckpointSchedule, SavesOnEveryReasonAndNeverWithoutSave) {
  CheckpointOptions o;
  o.save_interval = 20;
  o.exit_after_step = 7;
  const CheckpointSchedule none(o);  // no --save
  EXPECT_FALSE(none.save_after(20, true, true, 20));
  o.save_dir = "ckpt";
  const CheckpointSchedule s(o);
  EXPECT_FALSE(s.save_after(3, false, false, 100));
  EXPECT_TRUE(s.save_after(40, false, false, 100));  // --save-interval
  EXPECT_TRUE(s.save_after(3, true, false, 100));    // a stop signal
  EXPECT_TRUE(s.save_after(3, false, true, 100));    // --save-minutes, agreed
  EXPECT_TRUE(s.save_after(100, false, false, 100));  // the last step
  EXPECT_TRUE(s.exit_after(7));
  EXPECT_TRUE(s.save_after(7, false, false, 100));  // --exit-after-step
  EXPECT_FALSE(s.exit_after(8));
  EXPECT_FALSE(s.time_due());  // --save-minutes 0: off
  o.save_minutes = 1e-6;  // 60 µs
  CheckpointSchedule soon(o);
  soon.restart_clock();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_TRUE(soon.time_due());
  o.save_minutes = 60;
  CheckpointSchedule hour(o);
  hour.restart_clock();
  EXPECT_FALSE(hour.time_due());
}

TEST(NonfiniteSteps, StopsAtTheLimitInARowAndAFiniteStepResets) {
  NonfiniteSteps n(3);
  EXPECT_FALSE(n.record(true));
  EXPECT_FALSE(n.record(true));
  EXPECT_FALSE(n.record(false));  // a finite step: the count starts again
  EXPECT_EQ(n.in_a_row(), 0);
  EXPECT_FALSE(n.record(true));
  EXPECT_FALSE(n.record(true));
  EXPECT_TRUE(n.record(true));
  EXPECT_EQ(n.in_a_row(), 3);
}

TEST(LogWindow, AveragesSinceTheLastBoundaryAcrossARestore) {
  LogWindow w(10);
  w.restore({6.0, 2});  // a checkpoint taken two steps into the window
  w.add(4.0, 100);
  EXPECT_DOUBLE_EQ(w.losses().mean(), 10.0 / 3);
  EXPECT_FALSE(w.boundary(13));
  EXPECT_TRUE(w.boundary(20));
  w.printed(false);  // a line between boundaries keeps the loss window
  EXPECT_EQ(w.losses().steps, 3);
  w.add(2.0, 100);
  w.printed(true);
  EXPECT_EQ(w.losses().steps, 0);
}

// A run resumed after step 10 of G = 8 sequences of T = 16 tokens, on dp = 2
// replicas of 4 sequences each: the samples of step 11 are 80..87, replica 1's
// share starts at 84, and a checkpoint after step 11 records 88 consumed.
TEST(RunPosition, ReplicaSharesAndTheDataPositionOfAResumedRun) {
  RunPosition p;
  p.start_step = 11;
  p.sample_base = 80;
  p.total_steps = 20;
  p.global_batch = 8;
  p.seq = 16;
  EXPECT_EQ(p.first_sample(11), 80);
  EXPECT_EQ(p.first_sample(12), 88);
  EXPECT_EQ(p.replica_first_sample(11, 0, 2), 80);
  EXPECT_EQ(p.replica_first_sample(11, 1, 2), 84);
  EXPECT_EQ(p.replica_first_sample(13, 1, 2), 100);
  EXPECT_EQ(p.consumed_after(11), 88);
  EXPECT_EQ(p.tokens_seen(11), 88 * 16);
  EXPECT_EQ(p.tokens_seen(20), 160 * 16);  // the whole budget, earlier run included
  EXPECT_EQ(p.tokens_per_step(), 128);
  EXPECT_EQ(p.budget_tokens(), 20 * 128);
}

TEST(RunTimes, TheFirstStepApartFromTheSteadyOnes) {
  RunTimes t;
  t.start();
  TimeSplit first, later;
  first.compute = 5;
  later.compute = 1;
  t.add(true, first);
  EXPECT_EQ(t.steady_steps(), 0);
  EXPECT_DOUBLE_EQ(t.split().compute, 5);  // the only step
  EXPECT_GT(t.tokens_per_second(100), 0);
  t.add(false, later);
  t.add(false, later);
  EXPECT_EQ(t.steady_steps(), 2);
  EXPECT_DOUBLE_EQ(t.split().compute, 2);  // the warm-up step left out
}

}  // namespace
}  // namespace wiola
