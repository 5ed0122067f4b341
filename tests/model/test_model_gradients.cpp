// The whole model's gradient against central finite differences in fp64, for
// every combination of summary mode and ATM mode, in training mode (ATM on in
// the middle layers). tau = 0 makes ATM merge some pairs and not others.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "model_test_util.hpp"
#include "support/gradcheck.hpp"

namespace wiola::test {
namespace {

struct Mode {
  SummaryMode summary;
  AtmMode atm;
};

class ModelGradient : public ::testing::TestWithParam<Mode> {};

TEST_P(ModelGradient, MatchesFiniteDifferences) {
  const ModelConfig c = tiny_config(GetParam().summary, GetParam().atm, /*tau=*/0.0);
  WholeModel m(c, DType::F64);
  const Batch b = make_batch(2, c.T, c.V, 11);
  m.loss_and_grads(b, true);
  ParamStore& ps = m.model->params();

  // Merges must really happen in the ATM modes, or the test proves nothing.
  if (c.atm != AtmMode::Off) {
    StageSaved saved;
    m.model->forward(m.input(b), true, saved);
    EXPECT_LT(saved.merged_tokens, std::int64_t(b.B) * b.T * 2)
        << "no token was merged in the ATM layers";
  }

  double diff2 = 0, ana2 = 0, worst = 0;
  std::string worst_name;
  struct PerParam {
    std::string name;
    GradCheckResult r;
  };
  std::vector<PerParam> results;
  for (const ParamSpec& p : ps.layout().entries()) {
    const std::vector<double> analytic = ps.get_grad(p.name);
    const GradCheckResult r = check_gradient(
        *m.be, ps.param(p.name), [&] { return m.loss(b, true); }, analytic, kDefaultStep, 6);
    const double diff = r.rel_error * std::max(r.analytic_norm, r.numeric_norm);
    diff2 += diff * diff;
    ana2 += r.analytic_norm * r.analytic_norm;
    results.push_back({p.name, r});
  }
  const double global = std::sqrt(ana2);
  const double global_rel = std::sqrt(diff2) / global;
  for (const auto& [name, r] : results) {
    // Relative to the parameter's own gradient, with a floor for the rare
    // parameter whose sampled gradient is almost zero.
    const double scale = std::max({r.analytic_norm, r.numeric_norm, 1e-3 * global});
    const double rel = r.rel_error * std::max(r.analytic_norm, r.numeric_norm) / scale;
    EXPECT_LE(rel, 1e-6) << name << ": analytic norm " << r.analytic_norm << ", numeric norm "
                         << r.numeric_norm;
    if (rel > worst) {
      worst = rel;
      worst_name = name;
    }
  }
  EXPECT_LE(global_rel, 1e-6);
  std::printf("[gradcheck] summary=%s atm=%s: global rel error %.3e, worst parameter %s %.3e\n",
              std::string(summary_mode_name(c.summary)).c_str(),
              std::string(atm_mode_name(c.atm)).c_str(), global_rel, worst_name.c_str(), worst);
  RecordProperty("global_rel_error", std::to_string(global_rel));
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, ModelGradient,
    ::testing::Values(Mode{SummaryMode::Causal, AtmMode::Off},
                      Mode{SummaryMode::Causal, AtmMode::Causal},
                      Mode{SummaryMode::Causal, AtmMode::Paper},
                      Mode{SummaryMode::Sequence, AtmMode::Off},
                      Mode{SummaryMode::Sequence, AtmMode::Causal},
                      Mode{SummaryMode::Sequence, AtmMode::Paper}),
    [](const ::testing::TestParamInfo<Mode>& info) {
      return std::string(summary_mode_name(info.param.summary)) + "_" +
             std::string(atm_mode_name(info.param.atm));
    });

// Lambda = 3 exercises contexts of three summaries.
TEST(ModelGradientLambda, ThreeSummaries) {
  ModelConfig c = tiny_config();
  c.Lambda = 3;
  WholeModel m(c, DType::F64);
  const Batch b = make_batch(2, c.T, c.V, 5);
  m.loss_and_grads(b, true);
  ParamStore& ps = m.model->params();
  for (const char* name : {"layers.2.attn.ctx_k_proj.weight", "layers.0.attn.q_proj.weight",
                           "embed.weight", "layers.4.attn.ctx_logit"}) {
    const GradCheckResult r = check_gradient(*m.be, ps.param(name), [&] { return m.loss(b, true); },
                                             ps.get_grad(name), kDefaultStep, 12);
    EXPECT_LE(r.rel_error, 1e-6) << name;
  }
}

}  // namespace
}  // namespace wiola::test
