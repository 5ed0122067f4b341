// Schedule generation: the checker passes for every shape, memory bounds,
// warm-up counts, the bubble formula and the text form.
#include "pipeline/schedule.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "pipeline/schedule_check.hpp"

namespace wiola::pipeline {
namespace {

constexpr ScheduleKind kKinds[] = {ScheduleKind::GPipe, ScheduleKind::OneFOneB};

int count(const std::vector<Action>& list, ActionKind k) {
  int n = 0;
  for (const auto& a : list) n += a.kind == k;
  return n;
}

TEST(pipelineSchedule, CheckerPassesForAllShapes) {
  for (ScheduleKind kind : kKinds)
    for (int P = 1; P <= 8; ++P)
      for (int m = 1; m <= 16; ++m) {
        const auto all = make_schedules(kind, P, m);
        const ScheduleCheck r = check_schedules(all, m);
        ASSERT_TRUE(r.ok()) << schedule_kind_name(kind) << " P=" << P << " m=" << m << "\n"
                            << r.message() << format_schedules(all);
        ASSERT_EQ(r.peak_in_flight.size(), std::size_t(P));
      }
}

TEST(pipelineSchedule, OneFOneBHoldsAtMostStagesMinusIndex) {
  for (int P = 1; P <= 8; ++P)
    for (int m = 1; m <= 16; ++m) {
      const ScheduleCheck r = check_schedules(make_schedules(ScheduleKind::OneFOneB, P, m), m);
      for (int s = 0; s < P; ++s) {
        EXPECT_LE(r.peak_in_flight[s], P - s) << "P=" << P << " m=" << m << " s=" << s;
        EXPECT_EQ(r.peak_in_flight[s], std::min(P - s, m)) << "P=" << P << " m=" << m;
      }
    }
}

TEST(pipelineSchedule, GPipeHoldsEveryMicrobatch) {
  for (int P = 1; P <= 8; ++P)
    for (int m = 1; m <= 16; ++m) {
      const ScheduleCheck r = check_schedules(make_schedules(ScheduleKind::GPipe, P, m), m);
      for (int s = 0; s < P; ++s) EXPECT_EQ(r.peak_in_flight[s], m);
    }
}

TEST(pipelineSchedule, WarmupCounts) {
  for (int P = 1; P <= 8; ++P)
    for (int m = 1; m <= 16; ++m)
      for (int s = 0; s < P; ++s) {
        const int w = warmup_forwards(ScheduleKind::OneFOneB, P, s, m);
        EXPECT_EQ(w, std::min(P - s - 1, m));
        EXPECT_EQ(warmup_forwards(ScheduleKind::GPipe, P, s, m), m);
        // Forwards before the first backward: the warm-up, plus the first
        // steady-state forward when there is a steady state.
        const auto list = make_schedule(ScheduleKind::OneFOneB, P, s, m);
        int before = 0;
        for (const auto& a : list) {
          if (a.kind == ActionKind::Backward) break;
          before += a.kind == ActionKind::Forward;
        }
        EXPECT_EQ(before, w < m ? w + 1 : m) << "P=" << P << " s=" << s << " m=" << m;
      }
}

TEST(pipelineSchedule, OneFOneBAlternatesInSteadyState) {
  // P=4, stage 1, m=6: warm-up 2, then F B pairs, then cool-down.
  std::vector<Action> compute;
  for (const auto& a : make_schedule(ScheduleKind::OneFOneB, 4, 1, 6))
    if (a.kind == ActionKind::Forward || a.kind == ActionKind::Backward) compute.push_back(a);
  EXPECT_EQ(to_string(compute), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5");
}

TEST(pipelineSchedule, CommunicationByPosition) {
  const int P = 4, m = 5;
  for (ScheduleKind kind : kKinds)
    for (int s = 0; s < P; ++s) {
      const auto list = make_schedule(kind, P, s, m);
      EXPECT_EQ(count(list, ActionKind::Forward), m);
      EXPECT_EQ(count(list, ActionKind::Backward), m);
      EXPECT_EQ(count(list, ActionKind::RecvActivation), s == 0 ? 0 : m);
      EXPECT_EQ(count(list, ActionKind::SendGrad), s == 0 ? 0 : m);
      EXPECT_EQ(count(list, ActionKind::SendActivation), s == P - 1 ? 0 : m);
      EXPECT_EQ(count(list, ActionKind::RecvGrad), s == P - 1 ? 0 : m);
      EXPECT_EQ(list.size(), std::size_t(count(list, ActionKind::Forward) +
                                          count(list, ActionKind::Backward) +
                                          count(list, ActionKind::RecvActivation) +
                                          count(list, ActionKind::SendGrad) +
                                          count(list, ActionKind::SendActivation) +
                                          count(list, ActionKind::RecvGrad)));
    }
}

TEST(pipelineSchedule, ReceivesArePostedOneComputeAhead) {
  // The next micro-batch's receive is posted before the current forward runs.
  const auto list = make_schedule(ScheduleKind::GPipe, 3, 1, 3);
  EXPECT_EQ(to_string(list),
            "RA0 RA1 F0 SA0 RA2 F1 SA1 RG0 F2 SA2 RG1 B0 SG0 RG2 B1 SG1 B2 SG2");
  const auto last = make_schedule(ScheduleKind::OneFOneB, 2, 1, 2);
  EXPECT_EQ(to_string(last), "RA0 F0 RA1 B0 SG0 F1 B1 SG1");
}

TEST(pipelineSchedule, FewerMicrobatchesThanStages) {
  for (ScheduleKind kind : kKinds) {
    const auto all = make_schedules(kind, 8, 2);
    const ScheduleCheck r = check_schedules(all, 2);
    EXPECT_TRUE(r.ok()) << r.message();
  }
  ASSERT_TRUE(bubble_warning(8, 2).has_value());
  EXPECT_NE(bubble_warning(8, 2)->find("never fills"), std::string::npos);
}

TEST(pipelineSchedule, BubbleWarning) {
  EXPECT_FALSE(bubble_warning(1, 1).has_value());
  EXPECT_FALSE(bubble_warning(4, 16).has_value());  // 3/19 = 16%
  EXPECT_TRUE(bubble_warning(4, 8).has_value());    // 3/11 = 27%
  EXPECT_TRUE(bubble_warning(4, 3).has_value());
}

TEST(pipelineSchedule, TheoreticalBubble) {
  for (ScheduleKind kind : kKinds) {
    EXPECT_DOUBLE_EQ(theoretical_bubble(kind, 1, 7), 0.0);
    EXPECT_DOUBLE_EQ(theoretical_bubble(kind, 4, 8), 3.0 / 11.0);
    EXPECT_DOUBLE_EQ(theoretical_bubble(kind, 8, 1), 7.0 / 8.0);
    for (int P = 1; P <= 8; ++P)
      for (int m = 1; m <= 16; ++m)
        EXPECT_DOUBLE_EQ(theoretical_bubble(kind, P, m), double(P - 1) / (m + P - 1));
  }
}

TEST(pipelineSchedule, InvalidShapesThrow) {
  EXPECT_THROW(make_schedule(ScheduleKind::OneFOneB, 0, 0, 4), Error);
  EXPECT_THROW(make_schedule(ScheduleKind::OneFOneB, 4, 4, 4), Error);
  EXPECT_THROW(make_schedule(ScheduleKind::OneFOneB, 4, -1, 4), Error);
  EXPECT_THROW(make_schedule(ScheduleKind::GPipe, 4, 0, 0), Error);
  EXPECT_THROW(theoretical_bubble(ScheduleKind::GPipe, 4, 0), Error);
}

TEST(pipelineSchedule, KindNames) {
  EXPECT_EQ(parse_schedule_kind("gpipe"), ScheduleKind::GPipe);
  EXPECT_EQ(parse_schedule_kind("1f1b"), ScheduleKind::OneFOneB);
  EXPECT_EQ(schedule_kind_name(ScheduleKind::OneFOneB), "1f1b");
  EXPECT_THROW(parse_schedule_kind("zb-h3"), Error);
}

TEST(pipelineSchedule, TextRoundTrip) {
  for (ScheduleKind kind : kKinds)
    for (int s = 0; s < 4; ++s) {
      const auto list = make_schedule(kind, 4, s, 6);
      EXPECT_EQ(parse_actions(to_string(list)), list);
    }
  const Action chunked{ActionKind::Backward, 12, 3};
  EXPECT_EQ(to_string(chunked), "B12@3");
  EXPECT_EQ(parse_action("B12@3"), chunked);
  EXPECT_EQ(parse_actions("  RA0\tF0\n SA0 "), parse_actions("RA0 F0 SA0"));
  for (const char* bad : {"X1", "F", "F-1", "Fx", "RED", "OPT", "F1@", "F1@x", ""})
    EXPECT_THROW(parse_action(bad), Error) << bad;
}

}  // namespace
}  // namespace wiola::pipeline
