// The schedule checker finds each kind of broken schedule.
#include "pipeline/schedule_check.hpp"

#include <gtest/gtest.h>

#include "pipeline/schedule.hpp"

namespace wiola::pipeline {
namespace {

ScheduleCheck check(std::vector<std::string> stages, int m, int chunks = 1) {
  std::vector<std::vector<Action>> lists;
  for (const auto& s : stages) lists.push_back(parse_actions(s));
  return check_schedules(lists, m, chunks);
}

// True when some error contains `needle`.
bool mentions(const ScheduleCheck& r, const std::string& needle) {
  for (const auto& e : r.errors)
    if (e.find(needle) != std::string::npos) return true;
  return false;
}

const char* kGoodStage0 = "F0 SA0 F1 SA1 RG0 B0 RG1 B1";
const char* kGoodStage1 = "RA0 RA1 F0 B0 SG0 F1 B1 SG1";

TEST(pipelineCheck, AcceptsAHandWrittenSchedule) {
  const ScheduleCheck r = check({kGoodStage0, kGoodStage1}, 2);
  EXPECT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.peak_in_flight, (std::vector<int>{2, 1}));
}

TEST(pipelineCheck, FindsADeadlock) {
  // Stage 0 waits for the gradient of micro-batch 0 before sending the
  // activation of micro-batch 1; stage 1 needs that activation first.
  const ScheduleCheck r =
      check({"F0 SA0 RG0 B0 F1 SA1 RG1 B1", "RA0 RA1 F0 F1 B0 SG0 B1 SG1"}, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r, "deadlock")) << r.message();
  EXPECT_TRUE(mentions(r, "stage 0 waits at B0")) << r.message();
  EXPECT_TRUE(mentions(r, "stage 1 waits at F1")) << r.message();
}

TEST(pipelineCheck, FindsFifoMismatch) {
  const ScheduleCheck r = check({kGoodStage0, "RA1 RA0 F0 B0 SG0 F1 B1 SG1"}, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r, "not in FIFO order")) << r.message();
}

TEST(pipelineCheck, FindsMissingAndExtraCommunication) {
  EXPECT_TRUE(
      mentions(check({kGoodStage0, "RA0 F0 B0 SG0 F1 B1 SG1"}, 2), "RA1 is missing"));
  EXPECT_TRUE(mentions(check({"RA0 " + std::string(kGoodStage0), kGoodStage1}, 2),
                       "the first stage receives no activations"));
  EXPECT_TRUE(mentions(check({kGoodStage0, "RA0 RA1 F0 SA0 B0 SG0 F1 B1 SG1"}, 2),
                       "the last stage sends no activations"));
  EXPECT_TRUE(mentions(check({"F0 SA0 F1 SA1 RG0 B0 SG0 RG1 B1", kGoodStage1}, 2),
                       "the first stage sends no gradients"));
}

TEST(pipelineCheck, FindsOrderingErrors) {
  EXPECT_TRUE(mentions(check({"B0 F0"}, 1), "B0 comes before F0"));
  EXPECT_TRUE(mentions(check({"F0 SA0 RG0 B0", "F0 RA0 B0 SG0"}, 1),
                       "posted after the compute"));
  EXPECT_TRUE(
      mentions(check({"F0 SA0 SA0 RG0 B0", "RA0 F0 B0 SG0"}, 1), "more than once"));
  EXPECT_TRUE(mentions(check({"SA0 F0 RG0 B0", "RA0 F0 B0 SG0"}, 1),
                       "before the compute that produces it"));
  EXPECT_TRUE(mentions(check({"F0 B0 F1"}, 2), "B1 is missing"));
  EXPECT_TRUE(mentions(check({"F0 B0 F5 B5"}, 1), "out of range"));
}

TEST(pipelineCheck, AcceptsAnInterleavedSchedule) {
  // P = 2, two chunks: virtual stages 0..3 on stages 0, 1, 0, 1.
  const ScheduleCheck r = check({"F0 SA0 RA0@1 F0@1 SA0@1 RG0@1 B0@1 SG0@1 RG0 B0",
                                 "RA0 F0 SA0 RA0@1 F0@1 B0@1 SG0@1 RG0 B0 SG0"},
                                1, 2);
  EXPECT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.peak_in_flight, (std::vector<int>{2, 2}));
}

TEST(pipelineCheck, RejectsEmptyShapes) {
  EXPECT_FALSE(check_schedules({}, 1).ok());
  EXPECT_FALSE(check({"F0 B0"}, 0).ok());
}

}  // namespace
}  // namespace wiola::pipeline
