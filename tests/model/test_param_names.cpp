// Canonical parameter names are spelled once (core/param_names.hpp), and a
// parameter's layer is a field of its spec, not something parsed from its name.
#include <gtest/gtest.h>

#include "core/param_layout.hpp"
#include "core/param_names.hpp"

namespace wiola {
namespace {

TEST(ParamNames, Spelling) {
  namespace n = param_names;
  EXPECT_STREQ(n::kEmbed, "embed.weight");
  EXPECT_STREQ(n::kFinalNormGamma, "final_norm.gamma");
  EXPECT_STREQ(n::kFinalNormDelta, "final_norm.delta");
  EXPECT_EQ(n::layer_param(3, n::role::kQProj), "layers.3.attn.q_proj.weight");
  EXPECT_EQ(n::layer_role("layers.12.ffn.fuse.weight"), "ffn.fuse.weight");
  EXPECT_EQ(n::layer_role("final_norm.gamma"), "");
  EXPECT_TRUE(n::is_vector_param("layers.0.attn.ctx_logit"));
  EXPECT_TRUE(n::is_vector_param(n::kFinalNormDelta));
  EXPECT_FALSE(n::is_vector_param(n::kEmbed));
}

TEST(ParamLayout, EveryParameterKnowsItsLayer) {
  const ModelConfig c = preset("wiola-tiny");
  const StageSpec middle{1, 3, false, false};
  for (const StageSpec& s : {StageSpec::whole(c), middle}) {
    const ParamLayout layout(c, s);
    int layer_entries = 0;
    for (const ParamSpec& p : layout.entries()) {
      if (p.layer < 0) {
        EXPECT_TRUE(p.name == param_names::kEmbed || p.name == param_names::kFinalNormGamma ||
                    p.name == param_names::kFinalNormDelta)
            << p.name;
        continue;
      }
      ++layer_entries;
      EXPECT_GE(p.layer, s.first_layer);
      EXPECT_LT(p.layer, s.end_layer);
      EXPECT_EQ(p.name, param_names::layer_param(p.layer, param_names::layer_role(p.name)));
    }
    EXPECT_EQ(layer_entries, 18 * s.num_layers());
  }
}

}  // namespace
}  // namespace wiola
