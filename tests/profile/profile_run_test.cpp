// A real short profiling run in this process (one rank, wiola-mini): the time
// split adds up to the step, the throughput figures follow from the FLOP
// formula, and the simulator fed with the run's own per-stage times predicts it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <tuple>

#include "comm/mpi_communicator.hpp"
#include "model/flops.hpp"
#include "profile/profile_run.hpp"
#include "wiola-profile/projection.hpp"
#include "wiola-profile/report.hpp"

extern wiola::comm::MpiRuntime* g_profile_mpi;

namespace wiola::profile {
namespace {

const ProfileResult& mini_run() {
  static const ProfileResult res = [] {
    TrainOptions o;
    o.model.config = preset("wiola-mini");
    o.data.train_files = {WIOLA_EMBEDDED_TRAIN_FILE};
    o.parallel.micro_batch = 4;
    o.parallel.global_batch = 16;
    o.device.threads = 1;
    PeakFlops peak{1e12, "given"};
    return run_profile(o, 2, 4, g_profile_mpi->world(), g_profile_mpi->host(), peak, {});
  }();
  return res;
}

TEST(ProfileRun, TimeSplitAddsUpToTheStepTime) {
  const ProfileResult& r = mini_run();
  ASSERT_EQ(r.records.size(), 1u);
  ASSERT_EQ(r.metrics.ranks.size(), 1u);
  const TimeSplit& t = r.metrics.ranks[0].t;
  const double parts = t.compute + t.wait + t.comm + t.drain + t.reduce + t.optimizer;
  std::printf("[profile] step %.3f ms = compute %.3f + wait %.3f + comm %.3f + optimizer %.3f "
              "(drain %.3f, reduce %.3f) + other %.3f\n",
              t.step * 1e3, t.compute * 1e3, t.wait * 1e3, t.comm * 1e3,
              (t.drain + t.reduce + t.optimizer) * 1e3, t.drain * 1e3, t.reduce * 1e3,
              t.other * 1e3);
  EXPECT_GT(t.compute, 0.0);
  EXPECT_GT(t.optimizer, 0.0);
  // What the accounting controls, not how busy the machine is: the parts and
  // `other` (the time between measured intervals, which grows when the
  // thread is preempted there) add up to the step, and the parts never
  // exceed it (nothing counted twice).
  EXPECT_NEAR(parts + t.other, t.step, 1e-9 * t.step);
  EXPECT_GE(t.other, -1e-9 * t.step);
  // One rank: nobody to wait for.
  EXPECT_EQ(t.wait, 0.0);
  EXPECT_NEAR(t.drain, 0.0, 1e-12);

  // Every action of every measured step timed exactly once (4 micro-batches:
  // a forward and a backward each, then the reduction and the optimizer), in
  // disjoint intervals inside the step's window.
  const RankRecord& rec = r.records[0];
  ASSERT_EQ(rec.steps, 4);
  ASSERT_EQ(rec.step_ends.size(), 4u);
  std::map<std::tuple<int, EventKind, int>, int> seen;
  double prev_end = 0, busy = 0;
  for (const TimedAction& a : rec.actions) {
    ++seen[{a.step, a.kind, a.microbatch}];
    EXPECT_GE(a.begin, prev_end) << "an action starts before the previous one ended";
    EXPECT_GE(a.end, a.begin);
    const double step_begin = a.step == 1 ? 0.0 : rec.step_ends[std::size_t(a.step - 2)];
    EXPECT_GE(a.begin, step_begin);
    EXPECT_LE(a.end, rec.step_ends[std::size_t(a.step - 1)]);
    prev_end = a.end;
    busy += a.end - a.begin;
  }
  for (int step = 1; step <= 4; ++step) {
    for (int mb = 0; mb < 4; ++mb) {
      EXPECT_EQ((seen[{step, EventKind::Forward, mb}]), 1) << "step " << step << " mb " << mb;
      EXPECT_EQ((seen[{step, EventKind::Backward, mb}]), 1) << "step " << step << " mb " << mb;
    }
    EXPECT_EQ((seen[{step, EventKind::ReduceGrads, -1}]), 1) << "step " << step;
    EXPECT_EQ((seen[{step, EventKind::OptimizerStep, -1}]), 1) << "step " << step;
  }
  EXPECT_EQ(rec.actions.size(), 4u * (2 * 4 + 2));
  EXPECT_LE(busy, rec.window_s);
}

TEST(ProfileRun, ThroughputFollowsTheFlopFormula) {
  const ProfileResult& r = mini_run();
  const OverallMetrics& o = r.metrics.overall;
  const RunLayout& l = r.layout;
  EXPECT_EQ(l.tokens_per_step(), 16 * 64);
  EXPECT_NEAR(o.tokens_per_s, double(l.tokens_per_step()) / o.step_s, 1e-9 * o.tokens_per_s);
  EXPECT_NEAR(o.flops_per_s, training_flops_per_token(l.model) * o.tokens_per_s,
              1e-9 * o.flops_per_s);
  EXPECT_NEAR(o.mfu, o.flops_per_s / 1e12, 1e-12);
  EXPECT_EQ(o.bubble_theory, 0.0);
  EXPECT_GT(o.peak_rss_bytes, 1e6);
  EXPECT_EQ(o.step_times.size(), 4u);
  // The vocabulary the trainer adopted from the data is the one counted.
  EXPECT_GT(l.model.V, 256);
}

TEST(ProfileRun, LayerTimesSumToTheMeasuredStage) {
  const ProfileResult& r = mini_run();
  const LayerTimes t = derive_layer_times(r.layout, r.metrics.stages);
  double f = t.embed.forward_s + t.head.forward_s, b = t.embed.backward_s + t.head.backward_s;
  for (const PartTimes& p : t.layers) {
    f += p.forward_s;
    b += p.backward_s;
  }
  EXPECT_NEAR(f, r.metrics.stages[0].forward_s, 1e-12);
  EXPECT_NEAR(b, r.metrics.stages[0].backward_s, 1e-12);
  // FLOP shares: the head's against a layer's.
  const ModelConfig& c = r.layout.model;
  EXPECT_NEAR(t.head.forward_s / t.layers[1].forward_s,
              head_forward_flops_per_token(c) / layer_forward_flops_per_token(c, 1), 1e-9);
}

TEST(ProfileRun, SimulatorPredictsTheRunFromItsOwnStageTimes) {
  const ProfileResult& r = mini_run();
  const Projection p = project(projection_from_profile(measured_profile(r), {}));
  ASSERT_TRUE(p.spec.measured.has_value());
  EXPECT_EQ(p.spec.source, TimeSource::Stages);
  const double predicted = p.metrics.overall.step_s, measured = r.metrics.overall.step_s;
  std::printf("[profile] one rank: predicted step %.3f ms, measured %.3f ms\n", predicted * 1e3,
              measured * 1e3);
  EXPECT_NEAR(predicted, measured, 0.10 * measured);
  // Through the file format: profile.json read back predicts the same, to the bit.
  const MeasuredProfile back = measured_profile_from_json(
      Json::parse(profile_json(r).dump()), "profile.json");
  const Projection q = project(projection_from_profile(back, {}));
  EXPECT_EQ(q.metrics.overall.step_s, predicted);
  EXPECT_EQ(q.metrics.overall.bubble, p.metrics.overall.bubble);
  EXPECT_EQ(q.spec.source_text, p.spec.source_text);
}

TEST(ProfileRun, ReportsNameTheirUnits) {
  const ProfileResult& r = mini_run();
  const std::string text = format_profile(r, 6.25e6, "chinchilla");
  EXPECT_NE(text.find("tokens/s"), std::string::npos);
  EXPECT_NE(text.find("getrusage"), std::string::npos);
  EXPECT_NE(text.find("time to train 6.25e+06 tokens"), std::string::npos);
  const std::string csv = profile_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);  // header, rank, stage, all
}

}  // namespace
}  // namespace wiola::profile
