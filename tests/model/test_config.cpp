// Presets, exact parameter counts and configuration errors.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/model_config.hpp"
#include "model/flops.hpp"
#include "core/param_layout.hpp"

namespace wiola {
namespace {

// The count written out from SPEC.md's shapes, independently of ParamLayout.
std::int64_t by_hand(const ModelConfig& c) {
  const std::int64_t d = c.d, kv = std::int64_t(c.Hkv) * (c.d / c.H);
  if (c.arch == Arch::Wiola13m) {  // SPEC "The Wiola 13M variant"
    const std::int64_t H = c.H, dh = c.d / c.H, dff = c.dff;
    const std::int64_t layer = d                    // attn_norm.gamma
                               + 2 * d * d          // q, o (H·dh = d)
                               + 2 * kv * d         // k, v
                               + H * dh + H * H + H  // gate_w1, gate_w2, its bias
                               + d                  // ffn_norm.gamma
                               + 2 * dff * d + dff * d + d * dff;  // up, bypass, down
    return std::int64_t(c.V) * d + c.L * layer + d;
  }
  const std::int64_t layer = 2 * d                 // attn_norm
                             + d * d + d * d + d * d  // q, gate, o (H·dh = d)
                             + 4 * kv * d           // k, v, ctx_k, ctx_v
                             + 1                    // ctx_logit
                             + 2 * d                // ffn_norm
                             + 3 * std::int64_t(c.dA) * d + 2 * std::int64_t(c.dB) * d + 2 * d * d;
  return std::int64_t(c.V) * d + c.L * layer + 2 * d;
}

TEST(Presets, ExactParameterCounts) {
  for (const std::string& name : preset_names()) {
    const ModelConfig c = preset(name);
    EXPECT_NO_THROW(c.validate()) << name;
    EXPECT_EQ(param_count(c), by_hand(c)) << name;
    EXPECT_EQ(ParamLayout(c, StageSpec::whole(c)).parameters(), param_count(c)) << name;
  }
  // The figures docs/models.md quotes.
  EXPECT_EQ(param_count(preset("wiola-120m")), 147297804);
  EXPECT_EQ(param_count(preset("wiola-360m")), 318048272);
  EXPECT_EQ(param_count(preset("wiola-700m")), 1068518424);
  EXPECT_EQ(param_count(preset("wiola-1.5b")), 2179698716);
  EXPECT_EQ(param_count(preset("wiola-13m")), 12589888);  // SPEC's figure
}

TEST(Presets, FamilyRule) {
  for (const char* n : {"wiola-120m", "wiola-360m", "wiola-700m", "wiola-1.5b"}) {
    const ModelConfig c = preset(n);
    EXPECT_EQ(c.dA, c.d);
    EXPECT_EQ(c.dB, 4 * c.d);
    EXPECT_EQ(c.V, 32000);
    EXPECT_EQ(c.T, 2048);
  }
  EXPECT_EQ(preset("wiola-1.5b").head_dim(), 128);
  EXPECT_EQ(preset("wiola-700m").head_dim(), 96);
}

TEST(Presets, UnknownNameListsTheKnownOnes) {
  try {
    preset("wiola-7b");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wiola-7b"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("wiola-1.5b"), std::string::npos);
  }
}

std::string error_of(const ModelConfig& c) {
  try {
    c.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Config, InconsistentShapesAreNamed) {
  ModelConfig c = preset("wiola-tiny");
  c.H = 3;
  EXPECT_NE(error_of(c).find("not divisible by H"), std::string::npos) << error_of(c);
  c = preset("wiola-tiny");
  c.Hkv = 3;
  EXPECT_NE(error_of(c).find("Hkv = 3 does not divide H = 4"), std::string::npos) << error_of(c);
  c = preset("wiola-tiny");
  c.d = 12;  // dh = 3 is odd
  EXPECT_NE(error_of(c).find("even"), std::string::npos) << error_of(c);
  c = preset("wiola-tiny");
  c.L = 0;
  EXPECT_NE(error_of(c).find("L must be positive"), std::string::npos) << error_of(c);
}

TEST(Config, ModeNames) {
  EXPECT_EQ(parse_atm_mode("paper"), AtmMode::Paper);
  EXPECT_EQ(parse_summary_mode("sequence"), SummaryMode::Sequence);
  EXPECT_THROW(parse_atm_mode("on"), Error);
  EXPECT_THROW(parse_summary_mode("mean"), Error);
}

TEST(Config, AtmIsActiveInTheMiddleThird) {
  ModelConfig c = preset("wiola-1.5b");  // L = 28: layers [9, 18)
  EXPECT_FALSE(c.atm_layer(8));
  EXPECT_TRUE(c.atm_layer(9));
  EXPECT_TRUE(c.atm_layer(17));
  EXPECT_FALSE(c.atm_layer(18));
  c.atm = AtmMode::Off;
  EXPECT_FALSE(c.atm_layer(12));
}

TEST(Flops, TrainingIsThreeTimesForwardAndDominatedByTheMatrices) {
  const ModelConfig c = preset("wiola-1.5b");
  const double fwd = forward_flops_per_token(c, 0, c.L, true);
  EXPECT_DOUBLE_EQ(training_flops_per_token(c), 3 * fwd);
  // Within a few percent of 2 × (parameters) + attention for a model this size.
  const double dense = 2.0 * double(param_count(c));
  EXPECT_GT(fwd, dense);
  EXPECT_LT(fwd, 1.5 * dense);
}

}  // namespace
}  // namespace wiola
