// Splitting the model into stages changes nothing: chaining StageModels by
// hand (the carried summaries forward, their gradients back) reproduces the
// whole model's loss and every gradient. Dropping the carried summary's
// gradient must break it — the test that the gradient really crosses.
#include <gtest/gtest.h>

#include <cmath>

#include "model_test_util.hpp"

namespace wiola::test {
namespace {

struct Split {
  std::vector<StageSpec> specs;
};

// Runs forward/backward through the chain; returns the mean loss. When
// `drop_carry_grad` the carried summaries' gradients are zeroed in transit.
double run_chain(Backend& be, std::vector<std::unique_ptr<StageModel>>& stages, const Batch& b,
                 bool drop_carry_grad = false) {
  std::vector<StageSaved> saved(stages.size());
  StageInput in;
  in.batch = b.B;
  in.seq = b.T;
  in.tokens = upload_i32(be, b.inputs);
  in.targets = upload_i32(be, b.targets);
  StageOutput out;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    stages[s]->params().zero_grads();
    StageInput si;
    si.batch = b.B;
    si.seq = b.T;
    if (s == 0) si.tokens = in.tokens;
    if (s + 1 == stages.size()) si.targets = in.targets;
    if (s > 0) {
      si.x = out.x;
      si.carry = out.carry;
    }
    out = stages[s]->forward(si, true, saved[s]);
  }
  const double loss = loss_sum(be, out) / b.tokens();
  StageGrads g;
  for (int s = static_cast<int>(stages.size()) - 1; s >= 0; --s) {
    if (drop_carry_grad)
      for (auto& t : g.dcarry) be.fill(t, 0.0);
    g = stages[s]->backward(g.dx, g.dcarry, 1.0 / b.tokens(), saved[s]);
  }
  return loss;
}

std::vector<std::unique_ptr<StageModel>> make_stages(Backend& be, const ModelConfig& c,
                                                     const std::vector<int>& layers) {
  std::vector<std::unique_ptr<StageModel>> out;
  int first = 0;
  for (std::size_t s = 0; s < layers.size(); ++s) {
    StageSpec spec{first, first + layers[s], s == 0, s + 1 == layers.size()};
    out.push_back(std::make_unique<StageModel>(be, c, spec, DType::F64));
    out.back()->params().init(7);
    first += layers[s];
  }
  return out;
}

// Σ of both tied copies of the embedding gradient, as the trainer all-reduces them.
double grad_distance(WholeModel& whole, std::vector<std::unique_ptr<StageModel>>& stages) {
  double worst = 0;
  ParamStore& ref = whole.model->params();
  for (const ParamSpec& p : ref.layout().entries()) {
    std::vector<double> sum(static_cast<std::size_t>(p.numel()), 0.0);
    for (auto& s : stages)
      if (s->params().has(p.name)) {
        const auto g = s->params().get_grad(p.name);
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += g[i];
      }
    const auto r = ref.get_grad(p.name);
    double num = 0, den = 1e-30;
    for (std::size_t i = 0; i < r.size(); ++i) {
      num += (r[i] - sum[i]) * (r[i] - sum[i]);
      den += r[i] * r[i];
    }
    worst = std::max(worst, std::sqrt(num / den));
  }
  return worst;
}

class StageSplits : public ::testing::TestWithParam<std::tuple<SummaryMode, int>> {};

TEST_P(StageSplits, ChainEqualsWholeModel) {
  ModelConfig c = tiny_config(std::get<0>(GetParam()), AtmMode::Causal, 0.0);
  c.Lambda = std::get<1>(GetParam());
  WholeModel whole(c, DType::F64);
  const Batch b = make_batch(2, c.T, c.V, 13);
  const double ref = whole.loss_and_grads(b, true);
  // Boundaries everywhere, including right after layer 0.
  for (const std::vector<int>& split :
       {std::vector<int>{1, 4}, {2, 3}, {1, 1, 3}, {3, 1, 1}, {1, 1, 1, 1, 1}}) {
    auto stages = make_stages(*whole.be, c, split);
    const double loss = run_chain(*whole.be, stages, b);
    EXPECT_NEAR(loss, ref, 1e-12 * std::abs(ref));
    EXPECT_LE(grad_distance(whole, stages), 1e-10) << "split of " << split.size() << " stages";
  }
}

INSTANTIATE_TEST_SUITE_P(SummariesAndLookback, StageSplits,
                         ::testing::Combine(::testing::Values(SummaryMode::Causal,
                                                              SummaryMode::Sequence),
                                            ::testing::Values(2, 3)));

TEST(StageBoundary, DroppingTheSummaryGradientIsDetected) {
  const ModelConfig c = tiny_config();
  WholeModel whole(c, DType::F64);
  const Batch b = make_batch(2, c.T, c.V, 13);
  whole.loss_and_grads(b, true);
  auto stages = make_stages(*whole.be, c, {2, 3});
  run_chain(*whole.be, stages, b, /*drop_carry_grad=*/true);
  EXPECT_GT(grad_distance(whole, stages), 1e-6);
}

TEST(Stages, RecomputeGivesTheSameGradientsAcrossStages) {
  // Two stages, recompute on both: the carried summaries and their gradients
  // cross the boundary as without it, and every gradient is bit-identical.
  const ModelConfig c = tiny_config();
  const Batch b = make_batch(2, 12, c.V, 22);
  auto be = make_cpu_backend();
  std::vector<std::vector<double>> grads[2];
  for (int pass = 0; pass < 2; ++pass) {
    auto stages = make_stages(*be, c, {2, 3});
    for (auto& st : stages) st->set_recompute(pass == 1);
    run_chain(*be, stages, b);
    for (auto& st : stages) grads[pass].push_back(to_host_f64(*be, st->params().grads()));
  }
  for (std::size_t st = 0; st < grads[0].size(); ++st)
    EXPECT_EQ(grads[0][st], grads[1][st]) << "stage " << st;
}

TEST(Initialisation, DependsOnlyOnSeedNameAndIndex) {
  const ModelConfig c = tiny_config();
  auto be = make_cpu_backend();
  StageModel whole(*be, c, StageSpec::whole(c), DType::F64);
  StageModel part(*be, c, StageSpec{2, 4, false, true}, DType::F64);
  whole.params().init(99);
  part.params().init(99);
  for (const ParamSpec& p : part.params().layout().entries())
    EXPECT_EQ(part.params().get(p.name), whole.params().get(p.name)) << p.name;
  StageModel other(*be, c, StageSpec::whole(c), DType::F64);
  other.params().init(100);
  EXPECT_NE(other.params().get("layers.0.attn.q_proj.weight"),
            whole.params().get("layers.0.attn.q_proj.weight"));
}

}  // namespace
}  // namespace wiola::test
