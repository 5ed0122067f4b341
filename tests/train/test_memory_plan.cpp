// The memory estimate behind the start-up report and the refusal of layouts
// that cannot fit: what each setting changes.
#include <gtest/gtest.h>

#include "backend/backend.hpp"
#include "train/memory_plan.hpp"

namespace wiola {
namespace {

MemoryPlanInput base() {
  MemoryPlanInput in;
  in.model = preset("wiola-small");
  in.pp = 4;
  in.stage_index = 0;
  in.chunks = {StageSpec{0, 2, true, false}};
  in.dp = 2;
  in.micro_batch = 2;
  in.microbatches = 8;
  return in;
}

TEST(MemoryPlan, ActivationsFollowTheMicroBatchesInFlight) {
  MemoryPlanInput in = base();
  const MemoryEstimate first = estimate_memory(in);
  EXPECT_EQ(first.in_flight, 4);  // 1F1B: pp - stage
  in.stage_index = 3;
  in.chunks = {StageSpec{5, 6, false, true}};
  EXPECT_EQ(estimate_memory(in).in_flight, 1);
  in = base();
  in.microbatches = 2;
  EXPECT_EQ(estimate_memory(in).in_flight, 2);  // never more than exist
  in.schedule = pipeline::ScheduleKind::GPipe;
  in.microbatches = 8;
  EXPECT_EQ(estimate_memory(in).in_flight, 8);  // GPipe holds them all
  EXPECT_NEAR(estimate_memory(in).activations, 2.0 * first.activations, 1e-6 * first.activations);
}

TEST(MemoryPlan, TheNewSchedulesHoldWhatTheirListsHold) {
  MemoryPlanInput in = base();
  in.stage_index = 3;
  in.chunks = {StageSpec{5, 6, false, true}};
  in.schedule = pipeline::ScheduleKind::ZbH1;
  EXPECT_EQ(estimate_memory(in).in_flight, 4);  // stage s defers s W's: P on every stage
  in.schedule = pipeline::ScheduleKind::ZbH2;
  in.stage_index = 0;
  in.chunks = {StageSpec{0, 2, true, false}};
  EXPECT_EQ(estimate_memory(in).in_flight, 7);  // 2P - 1 on stage 0
  // Interleaved: chunks of one micro-batch, each with half the stage's layers.
  in.schedule = pipeline::ScheduleKind::Interleaved;
  in.chunks = {StageSpec{0, 1, true, false}, StageSpec{4, 5, false, false}};
  const MemoryEstimate e = estimate_memory(in);
  EXPECT_EQ(e.chunks, 2);
  EXPECT_EQ(e.in_flight, 2 * 3 + 4 + 1);  // warm-up 2(P-1) + (v-1)P, plus one
  in.schedule = pipeline::ScheduleKind::OneFOneB;
  in.chunks = {StageSpec{0, 2, true, false}};
  // The same layers held per micro-batch-chunk are half a stage's.
  EXPECT_NEAR(e.activations / e.in_flight,
              estimate_memory(in).activations / estimate_memory(in).in_flight / 2,
              1e-6 * e.activations);
}

TEST(MemoryPlan, RecomputeZeroAndPrecisionShrinkWhatTheyShould) {
  const MemoryEstimate plain = estimate_memory(base());
  MemoryPlanInput in = base();
  in.recompute = true;
  EXPECT_LT(estimate_memory(in).activations, 0.5 * plain.activations);
  in = base();
  in.zero = 1;
  EXPECT_NEAR(estimate_memory(in).optimizer, plain.optimizer / 2, 1e-6 * plain.optimizer);
  in = base();
  in.dtype = DType::BF16;
  const MemoryEstimate bf16 = estimate_memory(in);
  EXPECT_NEAR(bf16.weights, plain.weights / 2, 1e-6 * plain.weights);
  EXPECT_NEAR(bf16.optimizer, plain.optimizer * 1.5, 1e-6 * plain.optimizer);  // + fp32 master
  EXPECT_NEAR(bf16.activations, plain.activations / 2, 1e-6 * plain.activations);
  EXPECT_NE(plain.describe().find("for 4 micro-batches"), std::string::npos) << plain.describe();
}

// CUDA graphs keep a forward's and a backward's transients per micro-batch
// in flight, and the last stage's block of logits: only on a device, with
// graphs on and more than one micro-batch (the first runs eagerly).
TEST(MemoryPlan, CudaGraphsAddTheirSlotsTransients) {
  MemoryPlanInput in = base();
  in.device = true;
  const MemoryEstimate eager = estimate_memory(in);
  EXPECT_EQ(eager.graphs, 0.0);
  EXPECT_EQ(eager.describe().find("graphs"), std::string::npos) << eager.describe();
  in.cuda_graphs = true;
  const MemoryEstimate graphed = estimate_memory(in);
  const double layer_transients = eager.workspace - 32.0 * 1024 * 1024;  // one layer's
  EXPECT_NEAR(graphed.graphs, 4 * 2 * layer_transients, 1e-6 * graphed.graphs);  // 4 in flight
  EXPECT_NEAR(graphed.total(), eager.total() + graphed.graphs, 1e-6 * graphed.total());
  EXPECT_NE(graphed.describe().find(", graphs "), std::string::npos) << graphed.describe();
  in.stage_index = 3;  // the head's stage: one in flight, with its logits block
  in.chunks = {StageSpec{5, 6, false, true}};
  const MemoryEstimate last = estimate_memory(in);
  EXPECT_GT(last.graphs, 2 * layer_transients);
  in.microbatches = 1;
  EXPECT_EQ(estimate_memory(in).graphs, 0.0);
  in = base();
  in.cuda_graphs = true;  // the CPU records none
  EXPECT_EQ(estimate_memory(in).graphs, 0.0);
}

// A CPU stage keeps each micro-batch's logits; a device's loss keeps none
// and makes them a block of rows at a time, so its head does not grow with
// the vocabulary or the micro-batches in flight beyond one block.
TEST(MemoryPlan, ADeviceHeadHoldsOneBlockOfLogitsNotEachMicroBatchs) {
  MemoryPlanInput in;
  in.model = preset("wiola-1.5b");
  in.pp = 4;
  in.stage_index = 0;  // 4 micro-batches in flight
  in.chunks = {StageSpec{0, 28, true, true}};
  in.micro_batch = 4;
  in.microbatches = 8;
  in.dtype = DType::BF16;
  const double tokens = 4.0 * in.model.T, GiB = 1024.0 * 1024 * 1024;
  const MemoryEstimate cpu = estimate_memory(in);
  EXPECT_EQ(cpu.in_flight, 4);
  EXPECT_NEAR(cpu.head, (in.model.V + 2.0 * in.model.d) * tokens * 2 * 4, 1.0);
  in.device = true;
  const MemoryEstimate dev = estimate_memory(in);
  // x_last, xf and the dxf its forward made, per micro-batch; one block.
  EXPECT_NEAR(dev.head, 3.0 * in.model.d * tokens * 2 * 4 + double(Backend::kHeadLossBlockBytes),
              1.0);
  EXPECT_GT(cpu.head, 2.0 * GiB);  // 4 × 8,192 × 32,000 bf16 logits
  EXPECT_GT(cpu.head, 3.0 * dev.head);
}

}  // namespace
}  // namespace wiola
