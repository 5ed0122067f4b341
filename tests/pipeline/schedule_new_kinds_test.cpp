// Interleaved 1F1B and the zero-bubble schedules (ZB-H1, ZB-H2): the checker
// proves every shape P <= 8, m <= 16, v <= 4; their memory bounds; their order
// rules; the shape refusals.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.hpp"
#include "pipeline/schedule.hpp"
#include "pipeline/schedule_check.hpp"

namespace wiola::pipeline {
namespace {

int count(const std::vector<Action>& list, ActionKind k) {
  int n = 0;
  for (const auto& a : list) n += a.kind == k;
  return n;
}

TEST(pipelineScheduleInterleaved, CheckerPassesForAllShapes) {
  for (int P = 2; P <= 8; ++P)
    for (int v = 2; v <= 4; ++v)
      for (int m = P; m <= 16; m += P) {
        const auto all = make_schedules(ScheduleKind::Interleaved, P, m, v);
        const ScheduleCheck r = check_schedules(all, m, v);
        ASSERT_TRUE(r.ok()) << "P=" << P << " v=" << v << " m=" << m << "\n"
                            << r.message() << format_schedules(all);
        for (int s = 0; s < P; ++s) {
          // Megatron-LM's bound: the warm-up forwards plus one, never more
          // than every chunk of every micro-batch.
          const int w = warmup_forwards(ScheduleKind::Interleaved, P, s, m, v);
          EXPECT_EQ(r.peak_in_flight[s], std::min(w + 1, m * v));
          EXPECT_EQ(count(all[s], ActionKind::Forward), m * v);
          EXPECT_EQ(count(all[s], ActionKind::Backward), m * v);
        }
      }
}

TEST(pipelineScheduleInterleaved, ChunksInGroupsOfStages) {
  // P = 2, v = 2, m = 4 on stage 0: micro-batches 0, 1 through chunk 0, then
  // chunk 1, then 2, 3 through chunk 0 ...
  std::vector<Action> fwd;
  for (const Action& a : make_schedule(ScheduleKind::Interleaved, 2, 0, 4, 2))
    if (a.kind == ActionKind::Forward) fwd.push_back(a);
  EXPECT_EQ(to_string(fwd), "F0 F1 F0@1 F1@1 F2 F3 F2@1 F3@1");
  std::vector<Action> bwd;
  for (const Action& a : make_schedule(ScheduleKind::Interleaved, 2, 0, 4, 2))
    if (a.kind == ActionKind::Backward) bwd.push_back(a);
  EXPECT_EQ(to_string(bwd), "B0@1 B1@1 B0 B1 B2@1 B3@1 B2 B3");
}

TEST(pipelineScheduleInterleaved, TheWrapCrossesFromTheLastRankToTheFirst) {
  // The last rank's chunk 0 sends to rank 0's chunk 1; rank 0's chunk 1
  // sends its gradient back to it.
  const auto last = make_schedule(ScheduleKind::Interleaved, 3, 2, 3, 2);
  const auto first = make_schedule(ScheduleKind::Interleaved, 3, 0, 3, 2);
  EXPECT_GT(count(last, ActionKind::SendActivation), 0);
  for (const Action& a : last) {
    if (a.kind == ActionKind::SendActivation) {
      EXPECT_EQ(a.chunk, 0);
    }
  }
  for (const Action& a : first) {
    if (a.kind == ActionKind::RecvActivation || a.kind == ActionKind::SendGrad) {
      EXPECT_EQ(a.chunk, 1) << to_string(a);
    }
  }
}

TEST(pipelineScheduleZeroBubble, CheckerPassesForAllShapes) {
  for (ScheduleKind kind : {ScheduleKind::ZbH1, ScheduleKind::ZbH2})
    for (int P = 1; P <= 8; ++P)
      for (int m = 1; m <= 16; ++m) {
        const auto all = make_schedules(kind, P, m);
        const ScheduleCheck r = check_schedules(all, m);
        ASSERT_TRUE(r.ok()) << schedule_kind_name(kind) << " P=" << P << " m=" << m << "\n"
                            << r.message() << format_schedules(all);
        int most = 0;
        for (int s = 0; s < P; ++s) {
          EXPECT_EQ(count(all[s], ActionKind::Backward), 0);
          EXPECT_EQ(count(all[s], ActionKind::BackwardInput), m);
          EXPECT_EQ(count(all[s], ActionKind::BackwardWeight), m);
          most = std::max(most, r.peak_in_flight[s]);
        }
        // ZB-H1 keeps 1F1B's peak (P on stage 0, reached when m >= P);
        // ZB-H2 may hold up to 2P - 1.
        if (kind == ScheduleKind::ZbH1)
          EXPECT_EQ(most, std::min(P, m)) << "P=" << P << " m=" << m;
        else
          EXPECT_EQ(most, std::min(2 * P - 1, m)) << "P=" << P << " m=" << m;
      }
}

TEST(pipelineScheduleZeroBubble, WeightGradientsFollowTheirInputGradientsInOrder) {
  for (ScheduleKind kind : {ScheduleKind::ZbH1, ScheduleKind::ZbH2})
    for (int s = 0; s < 4; ++s) {
      std::vector<int> bi, w;
      for (const Action& a : make_schedule(kind, 4, s, 8)) {
        if (a.kind == ActionKind::BackwardInput) bi.push_back(a.microbatch);
        if (a.kind == ActionKind::BackwardWeight) w.push_back(a.microbatch);
      }
      // Each parameter's gradient sums the micro-batches in the same order
      // as in 1F1B, so a split step adds up what an unsplit one does.
      EXPECT_EQ(bi, w);
      EXPECT_TRUE(std::is_sorted(w.begin(), w.end()));
    }
}

TEST(pipelineScheduleZeroBubble, H2FillsTheWarmUpWithForwards) {
  for (int P = 1; P <= 8; ++P)
    for (int m = 1; m <= 16; ++m)
      for (int s = 0; s < P; ++s) {
        int before_first_b = 0;
        for (const Action& a : make_schedule(ScheduleKind::ZbH2, P, s, m)) {
          if (a.kind == ActionKind::BackwardInput) break;
          before_first_b += a.kind == ActionKind::Forward;
        }
        const int w = warmup_forwards(ScheduleKind::ZbH2, P, s, m);
        EXPECT_EQ(before_first_b, std::min(w + 1, m)) << "P=" << P << " m=" << m << " s=" << s;
      }
}

TEST(pipelineScheduleZeroBubble, H1DefersStageIndexWeightGradients) {
  // Stage s of ZB-H1 runs its last s W actions after its last B.
  const int P = 4, m = 8;
  for (int s = 0; s < P; ++s) {
    const auto list = make_schedule(ScheduleKind::ZbH1, P, s, m);
    int after_last_b = 0;
    for (const Action& a : list) {
      if (a.kind == ActionKind::BackwardInput) after_last_b = 0;
      if (a.kind == ActionKind::BackwardWeight) ++after_last_b;
    }
    EXPECT_EQ(after_last_b, s + 1) << "stage " << s;  // its own W, then the s deferred
  }
}

TEST(pipelineScheduleZeroBubble, CheckerRefusesWBeforeB) {
  std::vector<std::vector<Action>> one = {parse_actions("F0 W0 BI0")};
  const ScheduleCheck r = check_schedules(one, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("W0 comes before BI0"), std::string::npos) << r.message();
  one = {parse_actions("F0 BI0")};
  EXPECT_NE(check_schedules(one, 1).message().find("W0 is missing"), std::string::npos);
  one = {parse_actions("F0 B0 BI0 W0")};
  EXPECT_NE(check_schedules(one, 1).message().find("both appear"), std::string::npos);
}

TEST(pipelineScheduleZeroBubble, BWaitsForItsGradientLikeABackward) {
  // B on stage 0 before stage 1 has sent: the simulation deadlocks.
  std::vector<std::vector<Action>> two = {
      parse_actions("F0 SA0 RG0 BI0 W0"),
      parse_actions("RA0 RG0 F0 BI0 SG0 W0")};
  EXPECT_FALSE(check_schedules(two, 1).ok());
  two = {parse_actions("F0 SA0 RG0 BI0 W0"), parse_actions("RA0 F0 BI0 SG0 W0")};
  EXPECT_TRUE(check_schedules(two, 1).ok()) << check_schedules(two, 1).message();
}

TEST(pipelineScheduleNewKinds, ShapeRefusalsNameTheFlags) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message([] { make_schedule(ScheduleKind::Interleaved, 2, 0, 3, 2); })
                .find("multiple of the pipeline stages"),
            std::string::npos);
  EXPECT_NE(message([] { make_schedule(ScheduleKind::Interleaved, 2, 0, 4, 1); })
                .find("--virtual-stages of at least 2"),
            std::string::npos);
  EXPECT_NE(message([] { make_schedule(ScheduleKind::Interleaved, 1, 0, 4, 2); })
                .find("at least two pipeline stages"),
            std::string::npos);
  EXPECT_NE(message([] { make_schedule(ScheduleKind::ZbH1, 2, 0, 4, 2); })
                .find("needs --schedule interleaved"),
            std::string::npos);
  EXPECT_EQ(parse_schedule_kind("zb-h1"), ScheduleKind::ZbH1);
  EXPECT_EQ(parse_schedule_kind("zb-h2"), ScheduleKind::ZbH2);
  EXPECT_EQ(parse_schedule_kind("interleaved"), ScheduleKind::Interleaved);
  EXPECT_NE(message([] { parse_schedule_kind("zb"); }).find("zb-h1"), std::string::npos);
}

TEST(pipelineScheduleNewKinds, TheoreticalBubbles) {
  EXPECT_DOUBLE_EQ(theoretical_bubble(ScheduleKind::Interleaved, 4, 8, 2), 3.0 / 19.0);
  EXPECT_DOUBLE_EQ(theoretical_bubble(ScheduleKind::ZbH1, 4, 8), 3.0 / 27.0);
  EXPECT_LT(theoretical_bubble(ScheduleKind::ZbH2, 4, 8),
            theoretical_bubble(ScheduleKind::OneFOneB, 4, 8));
}

TEST(pipelineScheduleNewKinds, BubbleWarningUsesTheSchedulesTheory) {
  EXPECT_TRUE(bubble_warning(4, 8).has_value());  // 1F1B: 3/11 = 27%
  EXPECT_FALSE(bubble_warning(4, 8, ScheduleKind::ZbH1).has_value());              // 3/27
  EXPECT_FALSE(bubble_warning(4, 8, ScheduleKind::Interleaved, 2).has_value());    // 3/19
  EXPECT_NE(bubble_warning(4, 4, ScheduleKind::Interleaved, 2)->find("interleaved"),
            std::string::npos);  // 3/11
}

TEST(pipelineScheduleNewKinds, TextFormOfTheSplitBackward) {
  const Action bi{ActionKind::BackwardInput, 3, 1}, w{ActionKind::BackwardWeight, 2, 0};
  EXPECT_EQ(to_string(bi), "BI3@1");
  EXPECT_EQ(to_string(w), "W2");
  EXPECT_EQ(parse_action("BI3@1"), bi);
  EXPECT_EQ(parse_action("W2"), w);
  EXPECT_EQ(parse_action("B4"), (Action{ActionKind::Backward, 4, 0}));
}

TEST(pipelineScheduleNewKinds, ForwardScheduleWalksEveryChunk) {
  EXPECT_EQ(to_string(make_forward_schedule(2, 0, 2, 2)),
            "F0 SA0 RA0@1 F0@1 SA0@1 F1 SA1 RA1@1 F1@1 SA1@1");
  EXPECT_EQ(to_string(make_forward_schedule(2, 1, 1, 2)), "RA0 F0 SA0 RA0@1 F0@1");
}

}  // namespace
}  // namespace wiola::pipeline
