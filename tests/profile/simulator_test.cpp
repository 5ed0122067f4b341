// The schedule simulator against the closed forms: with equal stage costs and
// free communication both schedules idle every stage for (P-1)/(m+P-1) of
// the step, the step takes (m+P-1)(tf+tb); links, ring collectives and ZeRO
// add what the model says they add.
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/schedule.hpp"
#include "profile/metrics.hpp"
#include "wiola-profile/cluster.hpp"
#include "wiola-profile/simulator.hpp"

namespace wiola::profile {
namespace {

using pipeline::ScheduleKind;

SimInput equal_stages(ScheduleKind kind, int P, int m, double tf, double tb) {
  SimInput in;
  in.schedule = kind;
  in.pp = P;
  in.dp = 1;
  in.microbatches = m;
  in.cluster.ranks_per_node = P;
  in.stages.assign(std::size_t(P), SimStage{tf, tb});
  return in;
}

TEST(Simulator, EqualStagesFreeLinksGiveTheTheoreticalBubble) {
  for (ScheduleKind kind : {ScheduleKind::OneFOneB, ScheduleKind::GPipe})
    for (int P = 1; P <= 8; ++P)
      for (int m : {1, 2, 3, 4, 7, 8, 16, 32})
        for (auto [tf, tb] : {std::pair{1.0, 2.0}, std::pair{1.0, 1.0}, std::pair{0.3, 0.7}}) {
          SCOPED_TRACE(testing::Message() << pipeline::schedule_kind_name(kind) << " P=" << P
                                          << " m=" << m << " tf=" << tf << " tb=" << tb);
          const SimResult r = simulate(equal_stages(kind, P, m, tf, tb));
          const double theory = pipeline::theoretical_bubble(kind, P, m);
          EXPECT_NEAR(theory, double(P - 1) / double(m + P - 1), 1e-15);
          EXPECT_NEAR(r.step_s, (m + P - 1) * (tf + tb), 1e-9);
          const std::vector<TimeSplit> splits = time_splits(r.records);
          ASSERT_EQ(int(splits.size()), P);
          for (const TimeSplit& t : splits) {
            EXPECT_NEAR(t.bubble(), theory, 1e-9);
            EXPECT_NEAR(t.compute, m * (tf + tb), 1e-9);
            EXPECT_NEAR(t.other, 0.0, 1e-9);
          }
        }
}

TEST(Simulator, RecordsEveryActionOfTheSchedule) {
  const int P = 4, m = 6;
  const SimResult r = simulate(equal_stages(ScheduleKind::OneFOneB, P, m, 1, 2));
  for (int s = 0; s < P; ++s) {
    const auto list = pipeline::make_schedule(ScheduleKind::OneFOneB, P, s, m);
    const auto& got = r.records[std::size_t(s)].actions;
    // The list's actions, then the trainer's two phases.
    ASSERT_EQ(got.size(), list.size() + 2);
    double last_end = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (i < list.size()) {
        EXPECT_EQ(got[i].kind, event_kind(list[i].kind));
        EXPECT_EQ(got[i].microbatch, list[i].microbatch);
      }
      EXPECT_GE(got[i].begin, last_end - 1e-12);  // one rank runs one action at a time
      last_end = got[i].end;
    }
    EXPECT_EQ(got[list.size()].kind, EventKind::ReduceGrads);
    EXPECT_EQ(got[list.size() + 1].kind, EventKind::OptimizerStep);
  }
}

TEST(Simulator, PointToPointTransfersAddLatencyAndBandwidthTime) {
  // Two stages, one micro-batch: F0 on 0, transfer, F0 + B0 on 1, transfer back, B0 on 0.
  SimInput in = equal_stages(ScheduleKind::OneFOneB, 2, 1, 1.0, 2.0);
  in.cluster.intra = {0.5, 100.0};  // 0.5 s + bytes / 100 B/s
  in.stages[0].message_bytes = 50;  // 0.5 s of bandwidth
  const SimResult r = simulate(in);
  // F0, 1 s transfer, F0 + B0, 1 s back, B0; then the tied embedding's sum
  // (2 ring steps of 0.5 s latency) and the norm all-reduce (2 log2(2) hops).
  EXPECT_NEAR(r.step_s, (1 + 1.0 + 1 + 2 + 1.0 + 2) + 2 * 0.5 + 2 * 0.5, 1e-9);
}

TEST(Simulator, InterNodeLinkFollowsTheRankLayout) {
  // pp 2 x dp 2 on nodes of 2: stage s, replica i is rank 2s + i; stages sit on
  // different nodes, so the boundary uses the inter-node link.
  SimInput in = equal_stages(ScheduleKind::OneFOneB, 2, 1, 1.0, 2.0);
  in.dp = 2;
  in.cluster.ranks_per_node = 2;
  in.cluster.intra = {0.0, 0.0};
  in.cluster.inter = {1.0, 0.0};
  const double slow = simulate(in).step_s;
  in.cluster.ranks_per_node = 4;  // everything on one node: free links
  const double fast = simulate(in).step_s;
  EXPECT_NEAR(fast, 6.0, 1e-9);
  // One inter-node hop each way (+2), the embedding sum between the stages'
  // nodes (2 ring steps, +2), the norm all-reduce over 4 ranks (2 log2(4) hops, +4).
  EXPECT_NEAR(slow, 6.0 + 2 + 2 + 4, 1e-9);
}

TEST(Simulator, DataParallelReductionByRingModel) {
  SimInput in = equal_stages(ScheduleKind::OneFOneB, 1, 2, 1.0, 2.0);
  in.dp = 4;
  in.cluster.ranks_per_node = 4;
  in.cluster.intra = {0.0, 1000.0};
  in.stages[0].grad_bytes = 4000;
  in.stages[0].param_bytes = 2000;
  in.stages[0].optimizer_s = 4.0;
  in.zero = 0;  // all-reduce: 2(n-1)/n x 4000 / 1000 = 6 s; full update 4 s
  EXPECT_NEAR(simulate(in).step_s, 6 + 6 + 4, 1e-9);
  in.zero = 1;  // reduce-scatter 3 s, a quarter of the update 1 s, all-gather 1.5 s
  EXPECT_NEAR(simulate(in).step_s, 6 + 3 + 1 + 1.5, 1e-9);
}

TEST(Simulator, UnevenStagesAreLimitedByTheSlowest) {
  SimInput in = equal_stages(ScheduleKind::OneFOneB, 2, 8, 1.0, 2.0);
  in.stages[1] = {2.0, 4.0};
  const SimResult r = simulate(in);
  // The slow stage is busy 8 x 6 s; the fast one feeds it 1 s earlier and drains 2 s later.
  EXPECT_NEAR(r.step_s, 8 * 6 + 1 + 2, 1e-9);
}

TEST(Cluster, RingCostsAndLinkSelection) {
  Cluster c;
  c.ranks_per_node = 2;
  c.intra = {1e-6, 1e11};
  c.inter = {1e-5, 1e10};
  EXPECT_EQ(c.node_of(3), 1);
  EXPECT_EQ(c.between(0, 1).latency_s, 1e-6);
  EXPECT_EQ(c.between(1, 2).latency_s, 1e-5);
  EXPECT_EQ(c.ring_link({0, 1}).bandwidth_Bps, 1e11);
  EXPECT_EQ(c.ring_link({0, 1, 2, 3}).bandwidth_Bps, 1e10);
  const Link l{0.0, 1e9};
  EXPECT_DOUBLE_EQ(ring_allreduce_s(8e9, 8, l), 2.0 * 7 / 8 * 8);
  EXPECT_DOUBLE_EQ(ring_reduce_scatter_s(8e9, 8, l), 7.0);
  EXPECT_DOUBLE_EQ(ring_allgather_s(8e9, 8, l), 7.0);
  EXPECT_EQ(ring_allreduce_s(8e9, 1, l), 0.0);
}

}  // namespace
}  // namespace wiola::profile
