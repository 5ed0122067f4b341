// The schedule simulator on the interleaved and zero-bubble schedules
// (pipeline/schedule.hpp): with equal stages and free links, the simulated
// bubble against pipeline::theoretical_bubble and the zero-bubble paper's
// claims; the chunks' costs and the split backward's B and W costs as given.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "pipeline/schedule.hpp"
#include "core/error.hpp"
#include "core/model_config.hpp"
#include "model/flops.hpp"
#include "partition/partition.hpp"
#include "profile/metrics.hpp"
#include "wiola-profile/projection.hpp"
#include "wiola-profile/report.hpp"
#include "wiola-profile/simulator.hpp"
#include "wiola-profile/spec_file.hpp"
#include "wiola-profile/sweep.hpp"
#include "wiola-profile/files.hpp"

namespace wiola::profile {
namespace {

using pipeline::ScheduleKind;

// P ranks of equal cost: per micro-batch the rank's forward takes tf, its
// backward tb of which tw is W; each of v chunks takes 1/v of that.
SimInput equal_ranks(ScheduleKind kind, int P, int m, int v, double tf, double tb, double tw) {
  SimInput in;
  in.schedule = kind;
  in.pp = P;
  in.dp = 1;
  in.microbatches = m;
  in.chunks = v;
  in.cluster.ranks_per_node = P;
  SimStage st;
  st.forward_s = tf / v;
  st.backward_s = tb / v;
  st.weight_s = tw / v;
  in.stages.assign(std::size_t(P * v), st);
  return in;
}

// The bubble every rank sees, checked to be the same on all ranks (equal
// stages); also checks each rank computed m (tf + tb).
double bubble_of(const SimInput& in, double tf, double tb) {
  const SimResult r = simulate(in);
  const std::vector<TimeSplit> splits = time_splits(r.records);
  double worst = 0;
  for (const TimeSplit& t : splits) {
    EXPECT_NEAR(t.compute, in.microbatches * (tf + tb), 1e-9);
    worst = std::max(worst, t.bubble());
  }
  return worst;
}

// Unit costs: T_F = 1, T_B = 2 of which W = 1 (so F, B and W cost 1 each).
constexpr double kF = 1, kB = 2, kW = 1;

TEST(SimulatorSchedules, OneFOneBStaysExact) {
  for (int P : {2, 4})
    for (int m : {P, 2 * P, 4 * P}) {
      const double b = bubble_of(equal_ranks(ScheduleKind::OneFOneB, P, m, 1, kF, kB, kW), kF, kB);
      EXPECT_NEAR(b, pipeline::theoretical_bubble(ScheduleKind::OneFOneB, P, m), 1e-12);
    }
}

// Each chunk costs 1/v of the rank, so the ramp is (P - 1) chunk-steps of
// (T_F + T_B) / v: the simulated bubble is exactly (P - 1) / (v m + P - 1),
// for every P, v and m tried (m a multiple of P, as the schedule requires).
TEST(SimulatorSchedules, InterleavedMatchesTheClosedForm) {
  for (int P : {2, 4})
    for (int v : {2, 3})
      for (int m : {P, 2 * P, 4 * P}) {
        SCOPED_TRACE(testing::Message() << "P=" << P << " v=" << v << " m=" << m);
        const SimInput in = equal_ranks(ScheduleKind::Interleaved, P, m, v, kF, kB, kW);
        const double b = bubble_of(in, kF, kB);
        EXPECT_NEAR(b, double(P - 1) / (v * m + P - 1), 1e-12);
        EXPECT_NEAR(b, pipeline::theoretical_bubble(ScheduleKind::Interleaved, P, m, v), 1e-12);
        EXPECT_NEAR(simulate(in).step_s, (m + double(P - 1) / v) * (kF + kB), 1e-9);
        EXPECT_LT(b, pipeline::theoretical_bubble(ScheduleKind::OneFOneB, P, m));
      }
}

// ZB-H1 with T_F = T_B = T_W: exactly the closed form (P - 1) / (3 m + P - 1);
// with B dearer than W, the paper's (P - 1)(T_F + T_B - T_W) of idle time.
TEST(SimulatorSchedules, ZeroBubbleH1MatchesThePaper) {
  for (int P : {2, 4})
    for (int m : {P, 2 * P, 4 * P}) {
      SCOPED_TRACE(testing::Message() << "P=" << P << " m=" << m);
      const double b = bubble_of(equal_ranks(ScheduleKind::ZbH1, P, m, 1, kF, kB, kW), kF, kB);
      EXPECT_NEAR(b, pipeline::theoretical_bubble(ScheduleKind::ZbH1, P, m), 1e-12);
      EXPECT_LT(b, pipeline::theoretical_bubble(ScheduleKind::OneFOneB, P, m));
      // B = 1.5, W = 0.5.
      const SimInput uneven = equal_ranks(ScheduleKind::ZbH1, P, m, 1, kF, kB, 0.5);
      EXPECT_NEAR(simulate(uneven).step_s, m * (kF + kB) + (P - 1) * (kF + 1.5 - 0.5), 1e-9);
    }
}

// ZB-H2 (pipeline::make_schedule: a greedy unit-cost order, up to 2P - 1
// micro-batches held): never slower than ZB-H1, faster once m >= 2P when B
// costs more than W (ZB-H1 then idles (P - 1)(T_F + T_B - T_W)), never
// below the (P - 1) T_F the last stage waits for its first input, and at
// the ideal when F, B and W cost the same.
TEST(SimulatorSchedules, ZeroBubbleH2BeatsH1WhenBCostsMore) {
  for (int P : {2, 4})
    for (int m : {P, 2 * P, 4 * P})
      for (double w : {kW, 0.5}) {
        SCOPED_TRACE(testing::Message() << "P=" << P << " m=" << m << " W=" << w);
        const SimInput h2 = equal_ranks(ScheduleKind::ZbH2, P, m, 1, kF, kB, w);
        const double t2 = simulate(h2).step_s;
        const double t1 = simulate(equal_ranks(ScheduleKind::ZbH1, P, m, 1, kF, kB, w)).step_s;
        const double ideal = m * (kF + kB) + (P - 1) * kF;
        EXPECT_LE(t2, t1 + 1e-9);
        EXPECT_GE(t2, ideal - 1e-9);
        if (w == kW) {
          EXPECT_NEAR(t2, ideal, 1e-9);
        }
        if (w < kB - w && m >= 2 * P) {
          EXPECT_LT(t2, t1 - 0.25);
        }
        EXPECT_LT(bubble_of(h2, kF, kB), pipeline::theoretical_bubble(ScheduleKind::OneFOneB, P, m));
      }
}

TEST(SimulatorSchedules, WeightShareDefaultsToHalfTheBackward) {
  SimStage st;
  st.backward_s = 3;
  EXPECT_DOUBLE_EQ(weight_seconds(st), 1.5);
  st.weight_s = 1;
  EXPECT_DOUBLE_EQ(weight_seconds(st), 1);
  st.weight_s = 5;  // more than the backward: all of it
  EXPECT_DOUBLE_EQ(weight_seconds(st), 3);
  SimInput known = equal_ranks(ScheduleKind::ZbH1, 4, 8, 1, 1, 3, 1.5);
  SimInput unknown = known;
  for (SimStage& s : unknown.stages) s.weight_s = -1;
  EXPECT_NEAR(simulate(known).step_s, simulate(unknown).step_s, 1e-12);
}

// The split backward's actions are recorded as B and W with their costs.
TEST(SimulatorSchedules, RecordsTheSplitBackward) {
  const SimResult r = simulate(equal_ranks(ScheduleKind::ZbH1, 2, 4, 1, 1, 3, 1));
  for (const RankRecord& rec : r.records) {
    int nb = 0, nw = 0;
    for (const TimedAction& a : rec.actions) {
      if (a.kind == EventKind::BackwardInput) {
        ++nb;
        EXPECT_NEAR(a.end - a.begin - a.waited, 2.0, 1e-12);
      }
      if (a.kind == EventKind::BackwardWeight) {
        ++nw;
        EXPECT_NEAR(a.end - a.begin - a.waited, 1.0, 1e-12);
      }
      EXPECT_NE(a.kind, EventKind::Backward);
    }
    EXPECT_EQ(nb, 4);
    EXPECT_EQ(nw, 4);
  }
}

// Interleaved: every virtual boundary's message has its own size, and the
// wrap (last rank's chunk c -> rank 0's chunk c + 1) crosses the link
// between those two ranks.
TEST(SimulatorSchedules, InterleavedBoundariesAndTheWrap) {
  const int P = 2, v = 2, m = 2;
  SimInput in = equal_ranks(ScheduleKind::Interleaved, P, m, v, 1, 2, 1);
  const double free_step = simulate(in).step_s;
  // The last virtual stage sends nothing: its size is never used.
  in.stages[std::size_t(P * v - 1)].message_bytes = 1e9;
  in.cluster.intra = {0.0, 1.0};
  EXPECT_NEAR(simulate(in).step_s, free_step, 1e-12);
  // The wrap boundary (virtual 1 -> 2, rank 1 -> rank 0) costs time once it has bytes.
  in.stages[std::size_t(P - 1)].message_bytes = 0.25;
  const double wrap_step = simulate(in).step_s;
  EXPECT_GT(wrap_step, free_step + 0.25 - 1e-12);
  // Over an inter-node link (each rank on its own node) it costs more.
  in.cluster.ranks_per_node = 1;
  in.cluster.inter = {1.0, 1.0};
  EXPECT_GT(simulate(in).step_s, wrap_step + 1.0 - 1e-12);
  // The costs must be per virtual stage.
  in.stages.pop_back();
  EXPECT_THROW(simulate(in), Error);
}

// A rank's chunks' rank-level costs add up: the optimizer runs once over all of them.
TEST(SimulatorSchedules, RankLevelCostsSumOverChunks) {
  SimInput in = equal_ranks(ScheduleKind::Interleaved, 2, 2, 2, 1, 2, 1);
  const double base = simulate(in).step_s;
  for (SimStage& s : in.stages) s.optimizer_s = 0.5;
  EXPECT_NEAR(simulate(in).step_s, base + 1.0, 1e-12);
}

// A layout with chunks: the per-virtual-stage figures add up per rank, and
// the same calls give the old answers with one chunk.
TEST(LayoutChunks, RankSumsOverItsVirtualStages) {
  RunLayout l;
  l.model = preset("wiola-mini");
  l.pp = 2;
  l.virtual_stages = 2;
  l.stages = partition_layers(l.model, 4);
  EXPECT_EQ(l.chunks_of(1), (std::vector<int>{1, 3}));
  EXPECT_NEAR(l.rank_flops_per_token(0) + l.rank_flops_per_token(1),
              training_flops_per_token(l.model), 1e-6 * training_flops_per_token(l.model));
  EXPECT_GT(l.stage_flops_per_token(3), l.stage_flops_per_token(2));  // the head
  EXPECT_GT(l.message_bytes(1), 0);  // the wrap: stage 1 chunk 0 -> stage 0 chunk 1
  EXPECT_EQ(l.message_bytes(3), 0);
  EXPECT_DOUBLE_EQ(l.rank_message_bytes(1), l.message_bytes(1));
  EXPECT_EQ(l.rank_layers(0).find('+') != std::string::npos, true);
  RunLayout one = l;
  one.virtual_stages = 1;
  one.stages = partition_layers(l.model, 2);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(one.rank_flops_per_token(s), one.stage_flops_per_token(s));
    EXPECT_EQ(one.rank_params(s), one.stage_params(s));
    EXPECT_EQ(one.rank_message_bytes(s), one.message_bytes(s));
  }
}

// Metrics of a simulated interleaved / zero-bubble run: the theory uses v, and
// per-stage times are per micro-batch through the whole rank, W included.
TEST(LayoutChunks, MetricsOfSimulatedRuns) {
  RunLayout l;
  l.model = preset("wiola-mini");
  l.pp = 2;
  l.microbatches = 4;
  l.global_batch = 4;
  l.virtual_stages = 2;
  l.schedule = ScheduleKind::Interleaved;
  l.stages = partition_layers(l.model, 4);
  const SimResult r = simulate(equal_ranks(ScheduleKind::Interleaved, 2, 4, 2, 1, 2, 1));
  const Metrics m = compute_metrics(l, r.records);
  EXPECT_NEAR(m.overall.bubble_theory, 1.0 / 9.0, 1e-12);
  EXPECT_NEAR(m.overall.bubble, 1.0 / 9.0, 1e-9);
  EXPECT_NEAR(m.stages[0].forward_s, 1.0, 1e-12);
  EXPECT_NEAR(m.stages[0].backward_s, 2.0, 1e-12);
  EXPECT_EQ(m.stages[1].chunks.size(), 2u);

  l.virtual_stages = 1;
  l.schedule = ScheduleKind::ZbH1;
  l.stages = partition_layers(l.model, 2);
  const SimResult z = simulate(equal_ranks(ScheduleKind::ZbH1, 2, 4, 1, 1, 3, 1));
  const Metrics mz = compute_metrics(l, z.records);
  EXPECT_NEAR(mz.stages[1].backward_s, 3.0, 1e-12);
  EXPECT_NEAR(mz.stages[1].weight_s, 1.0, 1e-12);
  EXPECT_NEAR(mz.overall.bubble_theory, pipeline::theoretical_bubble(ScheduleKind::ZbH1, 2, 4),
              1e-15);
}

TEST(SweepSchedules, ItemsAndPoints) {
  EXPECT_EQ(parse_sweep_schedule("zb-h2", 3), std::make_pair(ScheduleKind::ZbH2, 1));
  EXPECT_EQ(parse_sweep_schedule("interleaved", 1), std::make_pair(ScheduleKind::Interleaved, 2));
  EXPECT_EQ(parse_sweep_schedule("interleaved:3", 1),
            std::make_pair(ScheduleKind::Interleaved, 3));
  EXPECT_THROW(parse_sweep_schedule("interleaved:1", 1), Error);
  EXPECT_THROW(parse_sweep_schedule("interleaved:x", 1), Error);
  EXPECT_THROW(parse_sweep_schedule("zb-h1:2", 1), Error);
  EXPECT_THROW(parse_sweep_schedule("zb-h3", 1), Error);
  TrainOptions o;
  o.model.config = preset("wiola-mini");
  o.parallel.global_batch = 16;
  o.parallel.micro_batch = 4;
  SweepSpec s;
  s.pp = {1, 2};
  s.schedule = {"1f1b", "interleaved:2", "zb-h1", "zb-h2"};
  std::vector<std::string> skipped;
  const auto points = sweep_points(o, s, 2, skipped);
  // pp 1 cannot interleave; the other 7 combinations run.
  EXPECT_EQ(points.size(), 7u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("interleaved"), std::string::npos);
  int interleaved = 0;
  for (const SweepPoint& p : points)
    if (p.virtual_stages == 2) ++interleaved;
  EXPECT_EQ(interleaved, 1);
}

std::string write_spec(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  write_text_file(path.string(), text);
  return path.string();
}

const char* kSpec1p5b =
    "[model]\npreset = wiola-1.5b\n"
    "[cluster]\ngpus_per_node = 8\nnodes = 8\ndevice = h100\ncompute_efficiency = 0.45\n"
    "intra_bandwidth_GBps = 150\nintra_latency_us = 3\ninter_bandwidth_GBps = 45\n"
    "inter_latency_us = 10\nmemory_bandwidth_GBps = 3350\n"
    "[run]\npp = 4\nmicro_batch = 1\nglobal_batch = 512\nzero = 1\nactivation_bytes = 2\n"
    "param_bytes = 2\n";

// run.schedule = best (the default): every candidate simulated, the fastest that fits chosen.
TEST(ProjectionSchedules, BestIsTheFastestThatFits) {
  const std::string spec = write_spec("wiola-profile-sched.ini", kSpec1p5b);
  const Projection p = project(load_projection(spec, {}));
  ASSERT_EQ(p.candidates.size(), 4u);
  double fastest = 1e300;
  for (const ScheduleCandidate& c : p.candidates) {
    ASSERT_TRUE(c.ran) << c.note;
    EXPECT_TRUE(c.fits);
    fastest = std::min(fastest, c.step_s);
  }
  EXPECT_DOUBLE_EQ(p.metrics.overall.step_s, fastest);
  EXPECT_NE(format_projection(p).find("chosen: "), std::string::npos);
  // The interleaved candidate runs 8 virtual stages; ZB-H2 holds the most micro-batches of
  // the one-chunk schedules (2P - 1 on stage 0), interleaved more chunks than 1F1B.
  EXPECT_EQ(p.candidates[1].peak_in_flight, 11);  // 2(P-1) + (v-1)P + 1
  EXPECT_EQ(p.candidates[3].peak_in_flight, 7);   // 2P - 1
  EXPECT_EQ(p.candidates[0].peak_in_flight, 4);
  EXPECT_GT(p.candidates[3].memory_bytes, p.candidates[0].memory_bytes);
  // Too little memory for any: the fastest is still shown, and said not to fit.
  const Projection q = project(load_projection(spec, {"cluster.device_memory_GiB=1"}));
  EXPECT_NE(q.choice.find("no candidate fits"), std::string::npos);
  // Memory only for the lean schedules: ZB-H2 and interleaved drop out.
  const double lean = p.candidates[0].memory_bytes / (1024.0 * 1024 * 1024) / 0.95 + 0.5;
  const Projection r = project(
      load_projection(spec, {"cluster.device_memory_GiB=" + std::to_string(lean)}));
  EXPECT_FALSE(r.candidates[1].fits);
  EXPECT_FALSE(r.candidates[3].fits);
  EXPECT_NE(r.spec.layout.schedule, ScheduleKind::ZbH2);
  EXPECT_NE(r.spec.layout.schedule, ScheduleKind::Interleaved);
  std::filesystem::remove(spec);
}

TEST(ProjectionSchedules, ExplicitInterleavedRunsPerVirtualStage) {
  const std::string spec = write_spec("wiola-profile-sched2.ini", kSpec1p5b);
  const Projection p =
      project(load_projection(spec, {"run.schedule=interleaved", "run.virtual_stages=2"}));
  EXPECT_TRUE(p.candidates.empty());
  EXPECT_EQ(p.spec.layout.virtual_stages, 2);
  ASSERT_EQ(p.input.stages.size(), 8u);
  EXPECT_EQ(p.input.chunks, 2);
  EXPECT_NEAR(p.metrics.overall.bubble_theory, 3.0 / (2 * 32 + 3), 1e-12);
  // The wrap boundary (virtual 3 -> 4) carries a message; the last virtual stage none.
  EXPECT_GT(p.input.stages[3].message_bytes, 0);
  EXPECT_EQ(p.input.stages[7].message_bytes, 0);
  // Per-stage times need one value per virtual stage.
  EXPECT_THROW(load_projection(spec, {"run.schedule=interleaved", "times.stage_forward=1,1,1,1",
                                      "times.stage_backward=2,2,2,2"}),
               Error);
  EXPECT_THROW(load_projection(spec, {"run.schedule=interleaved", "run.microbatches=6"}), Error);
  // zb-h1 with a given W share: B and W split as told.
  const Projection z =
      project(load_projection(spec, {"run.schedule=zb-h1", "times.weight_share=0.25"}));
  EXPECT_NEAR(weight_seconds(z.input.stages[0]), 0.25 * z.input.stages[0].backward_s, 1e-15);
  std::filesystem::remove(spec);
}

}  // namespace
}  // namespace wiola::profile
