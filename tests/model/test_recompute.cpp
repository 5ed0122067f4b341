// --recompute full: keeping only each layer's input and running the layer
// again in backward gives the same loss and bit-identical gradients, in every
// summary and ATM mode, on whole models and pipeline stages.
#include <gtest/gtest.h>

#include <cstring>

#include "model_test_util.hpp"

namespace wiola::test {
namespace {

struct Mode {
  SummaryMode summary;
  AtmMode atm;
};

class Recompute : public ::testing::TestWithParam<Mode> {};

TEST_P(Recompute, GradientsAreBitIdentical) {
  ModelConfig c = preset("wiola-tiny");
  c.summary = GetParam().summary;
  c.atm = GetParam().atm;
  c.tau = 0.0;  // merge wherever the similarity is positive
  const Batch b = make_batch(2, 12, c.V, 21);
  for (DType dt : {DType::F64, DType::F32}) {
    WholeModel plain(c, dt), again(c, dt);
    again.model->set_recompute(true);
    const double l1 = plain.loss_and_grads(b, true), l2 = again.loss_and_grads(b, true);
    EXPECT_EQ(std::memcmp(&l1, &l2, sizeof l1), 0) << l1 << " vs " << l2;
    const std::vector<double> g1 = to_host_f64(*plain.be, plain.model->params().grads());
    const std::vector<double> g2 = to_host_f64(*again.be, again.model->params().grads());
    ASSERT_EQ(g1.size(), g2.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < g1.size(); ++i) differ += std::memcmp(&g1[i], &g2[i], sizeof(double)) != 0;
    EXPECT_EQ(differ, 0u) << dtype_name(dt) << ": " << differ << " gradient elements differ";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, Recompute,
                         ::testing::Values(Mode{SummaryMode::Causal, AtmMode::Off},
                                           Mode{SummaryMode::Causal, AtmMode::Causal},
                                           Mode{SummaryMode::Sequence, AtmMode::Paper},
                                           Mode{SummaryMode::Sequence, AtmMode::Causal}));

}  // namespace
}  // namespace wiola::test
