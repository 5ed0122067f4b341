// The causality contract (SPEC.md): with the default modes in training mode,
// changing any token after position t leaves every logit at positions <= t
// unchanged. And the paper-literal modes really do leak, so their warnings
// are true.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model_test_util.hpp"

namespace wiola::test {
namespace {

// Batch from windows of T+1 tokens: inputs w[0..T-1], targets w[1..T].
Batch from_windows(const std::vector<std::vector<std::int32_t>>& w) {
  Batch b;
  b.B = static_cast<int>(w.size());
  b.T = static_cast<int>(w[0].size()) - 1;
  for (const auto& win : w) {
    b.inputs.insert(b.inputs.end(), win.begin(), win.end() - 1);
    b.targets.insert(b.targets.end(), win.begin() + 1, win.end());
  }
  return b;
}

std::vector<std::vector<std::int32_t>> windows(int B, int T, int V, std::uint64_t seed) {
  std::vector<std::vector<std::int32_t>> w;
  for (int b = 0; b < B; ++b) w.push_back(random_tokens(std::size_t(T) + 1, V, seed + b));
  return w;
}

// Largest |a - b| over the logits of positions <= t of every sequence.
double prefix_diff(const std::vector<double>& a, const std::vector<double>& b, int B, int T, int V,
                   int t) {
  double m = 0;
  for (int s = 0; s < B; ++s)
    for (int p = 0; p <= t; ++p)
      for (int v = 0; v < V; ++v) {
        const std::size_t i = (std::size_t(s) * T + p) * V + v;
        m = std::max(m, std::abs(a[i] - b[i]));
      }
  return m;
}

// Per-position cross-entropy from logits.
std::vector<double> token_losses(const std::vector<double>& logits, const Batch& b, int V) {
  std::vector<double> out;
  for (std::size_t i = 0; i < b.targets.size(); ++i) {
    const double* z = logits.data() + i * V;
    const double mx = *std::max_element(z, z + V);
    double s = 0;
    for (int v = 0; v < V; ++v) s += std::exp(z[v] - mx);
    out.push_back(mx + std::log(s) - z[b.targets[i]]);
  }
  return out;
}

// Changes every window token at index > `after` and reports the largest change
// of the logits at positions <= t.
double leak(WholeModel& m, const ModelConfig& c, int t, int after, bool training,
            double* loss_change = nullptr) {
  auto w = windows(2, c.T, c.V, 21);
  const Batch base = from_windows(w);
  const std::vector<double> before = m.logits(base, training);
  for (auto& win : w)
    for (int k = after + 1; k <= c.T; ++k) win[k] = (win[k] + 1 + k) % c.V;
  const Batch changed = from_windows(w);
  const std::vector<double> now = m.logits(changed, training);
  if (loss_change) {
    const auto la = token_losses(before, base, c.V), lb = token_losses(now, changed, c.V);
    *loss_change = 0;
    for (int s = 0; s < base.B; ++s)
      for (int p = 0; p <= t; ++p)
        *loss_change = std::max(*loss_change, std::abs(la[std::size_t(s) * c.T + p] -
                                                        lb[std::size_t(s) * c.T + p]));
  }
  return prefix_diff(before, now, base.B, c.T, c.V, t);
}

class DefaultModesAreCausal : public ::testing::TestWithParam<double> {};

TEST_P(DefaultModesAreCausal, LaterTokensDoNotReachEarlierLogits) {
  const ModelConfig c = tiny_config(SummaryMode::Causal, AtmMode::Causal, GetParam());
  WholeModel m(c, DType::F64);
  for (int t : {0, 1, 4, 7, c.T - 2}) {
    // Inputs after t change: logits at <= t may not.
    EXPECT_LE(leak(m, c, t, t, true), 1e-12) << "t = " << t;
    // Window tokens after t+1 change (inputs and targets after t): the loss
    // terms at <= t may not either.
    double dloss = 0;
    leak(m, c, t, t + 1, true, &dloss);
    EXPECT_LE(dloss, 1e-12) << "t = " << t;
  }
}

// tau = 0 merges some pairs, tau = -2 merges every possible pair.
INSTANTIATE_TEST_SUITE_P(MergeThresholds, DefaultModesAreCausal, ::testing::Values(0.0, -2.0));

TEST(PaperModesLeak, SequenceSummariesSeeTheFuture) {
  const ModelConfig c = tiny_config(SummaryMode::Sequence, AtmMode::Off);
  WholeModel m(c, DType::F64);
  EXPECT_GT(leak(m, c, 3, 3, true), 1e-6);
  EXPECT_GT(leak(m, c, 3, 3, false), 1e-6);  // not only in training
}

TEST(PaperModesLeak, PaperAtmLetsAPairsFirstTokenSeeTheSecond) {
  // tau = -2: pairs (0,1), (2,3), (4,5)...; position 4 is a first member.
  const ModelConfig c = tiny_config(SummaryMode::Causal, AtmMode::Paper, -2.0);
  WholeModel m(c, DType::F64);
  EXPECT_GT(leak(m, c, 4, 4, true), 1e-6);
  // ATM is training-only: evaluation is causal again.
  EXPECT_LE(leak(m, c, 4, 4, false), 1e-12);
}

TEST(PaperModesLeak, WarningsNameTheLeaks) {
  EXPECT_TRUE(leak_warnings(tiny_config()).empty());
  const auto w = leak_warnings(tiny_config(SummaryMode::Sequence, AtmMode::Paper));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("sequence"), std::string::npos);
  EXPECT_NE(w[1].find("paper"), std::string::npos);
}

// With nothing merged, causal ATM is plain GCLA exactly: same logits and
// gradients bit for bit, in both precisions.
TEST(CausalAtm, NothingMergedEqualsAtmOffExactly) {
  for (DType dt : {DType::F32, DType::F64}) {
    ModelConfig on = tiny_config(SummaryMode::Causal, AtmMode::Causal, /*tau=*/1.5);
    ModelConfig off = tiny_config(SummaryMode::Causal, AtmMode::Off);
    WholeModel a(on, dt), b(off, dt);
    const Batch batch = make_batch(3, on.T, on.V, 4);
    EXPECT_EQ(a.logits(batch, true), b.logits(batch, true));
    EXPECT_EQ(a.loss_and_grads(batch, true), b.loss_and_grads(batch, true));
    EXPECT_EQ(to_host_f64(*a.be, a.model->params().grads()),
              to_host_f64(*b.be, b.model->params().grads()));
  }
}

TEST(CausalAtm, MergingSavesAttentionWork) {
  // The merged token count drops as tau falls: fewer keys per query.
  auto merged = [](double tau) {
    WholeModel m(tiny_config(SummaryMode::Causal, AtmMode::Causal, tau), DType::F64);
    const Batch b = make_batch(2, 12, 29, 9);
    StageSaved saved;
    m.model->forward(m.input(b), true, saved);
    return m.model->merged_tokens(saved);
  };
  EXPECT_GT(merged(1.5), merged(0.0));
  EXPECT_GT(merged(0.0), merged(-2.0));
}

TEST(CausalAtm, OneTokenSequenceRunsWithoutMerges) {
  ModelConfig c = tiny_config(SummaryMode::Causal, AtmMode::Causal, -2.0);
  WholeModel a(c, DType::F64);
  c.atm = AtmMode::Off;
  WholeModel b(c, DType::F64);
  const Batch batch = make_batch(2, 1, c.V, 3);
  EXPECT_EQ(a.loss_and_grads(batch, true), b.loss_and_grads(batch, true));
}

}  // namespace
}  // namespace wiola::test
