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

struct Worst {
  double global_rel = 0;  // over every sampled element of every parameter
  double param_rel = 0;   // the worst parameter
  std::string param;
};

// Checks `per_param` spread-out elements of every parameter. A parameter's
// error is relative to its own sampled gradient, floored at 1e-3 of the
// global norm (a parameter whose sampled elements have almost no gradient,
// e.g. embedding rows of tokens not in the batch, is judged absolutely).
Worst check_model(WholeModel& m, const Batch& b, std::int64_t per_param) {
  m.loss_and_grads(b, true);
  ParamStore& ps = m.model->params();
  struct One {
    std::string name;
    double diff, scale;
  };
  std::vector<One> all;
  double diff2 = 0, ana2 = 0;
  for (const ParamSpec& p : ps.layout().entries()) {
    const GradCheckResult r = check_gradient(*m.be, ps.param(p.name), [&] { return m.loss(b, true); },
                                             ps.get_grad(p.name), kDefaultStep, per_param);
    const double scale = std::max(r.analytic_norm, r.numeric_norm);
    const double diff = r.rel_error * scale;
    all.push_back({p.name, diff, scale});
    diff2 += diff * diff;
    ana2 += r.analytic_norm * r.analytic_norm;
  }
  Worst w;
  w.global_rel = std::sqrt(diff2 / ana2);
  for (const One& o : all) {
    const double rel = o.diff / std::max(o.scale, 1e-3 * std::sqrt(ana2));
    if (rel >= w.param_rel) {
      w.param_rel = rel;
      w.param = o.name;
    }
  }
  return w;
}

struct Mode {
  SummaryMode summary;
  AtmMode atm;
};

class ModelGradient : public ::testing::TestWithParam<Mode> {};

TEST_P(ModelGradient, MatchesFiniteDifferences) {
  const ModelConfig c = tiny_config(GetParam().summary, GetParam().atm, /*tau=*/0.0);
  WholeModel m(c, DType::F64);
  const Batch b = make_batch(2, c.T, c.V, 11);

  // Merges must really happen in the ATM modes, or the test proves nothing.
  if (c.atm != AtmMode::Off) {
    StageSaved saved;
    m.model->forward(m.input(b), true, saved);
    EXPECT_LT(m.model->merged_tokens(saved), std::int64_t(b.B) * b.T * c.L)
        << "no token was merged in the ATM layers";
  }
  const Worst w = check_model(m, b, 6);
  std::printf("[gradcheck] summary=%s atm=%s: global rel error %.3e, worst parameter %s %.3e\n",
              std::string(summary_mode_name(c.summary)).c_str(),
              std::string(atm_mode_name(c.atm)).c_str(), w.global_rel, w.param.c_str(),
              w.param_rel);
  EXPECT_LE(w.global_rel, 1e-6);
  EXPECT_LE(w.param_rel, 1e-6) << w.param;
  RecordProperty("global_rel_error", std::to_string(w.global_rel));
  RecordProperty("worst_param_rel_error", std::to_string(w.param_rel));
}

INSTANTIATE_TEST_SUITE_P(
    AllModes, ModelGradient,
    ::testing::Values(Mode{SummaryMode::Causal, AtmMode::Off},
                      Mode{SummaryMode::Causal, AtmMode::Causal},
                      Mode{SummaryMode::Causal, AtmMode::Paper},
                      Mode{SummaryMode::Sequence, AtmMode::Off},
                      Mode{SummaryMode::Sequence, AtmMode::Causal},
                      Mode{SummaryMode::Sequence, AtmMode::Paper}),
    [](const ::testing::TestParamInfo<Mode>& p) {
      return std::string(summary_mode_name(p.param.summary)) + "_" +
             std::string(atm_mode_name(p.param.atm));
    });

// Lambda = 3 exercises contexts of three summaries.
TEST(ModelGradientLambda, ThreeSummaries) {
  ModelConfig c = tiny_config();
  c.Lambda = 3;
  WholeModel m(c, DType::F64);
  const Worst w = check_model(m, make_batch(2, c.T, c.V, 5), 3);
  EXPECT_LE(w.global_rel, 1e-6);
  EXPECT_LE(w.param_rel, 1e-6) << w.param;
}

}  // namespace
}  // namespace wiola::test
