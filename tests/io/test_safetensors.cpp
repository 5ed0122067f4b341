// config.json next to model.safetensors: the model's fields under the keys
// config.json has always used, plus the usual Hugging Face names.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/model_fields.hpp"
#include "core/text.hpp"
#include "io/safetensors.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

TEST(HfConfig, RoundTripThroughTheFieldTable) {
  test::TempDir dir;
  ModelConfig c = preset("wiola-tiny");
  c.tau = 0.875;
  c.summary = SummaryMode::Sequence;
  c.atm = AtmMode::Off;
  c.init_std = 0.5;  // not an architecture field: not written
  write_hf_config(dir.file("config.json"), c, {"embed.weight"}, DType::F32);
  const auto j = nlohmann::json::parse(read_text_file(dir.file("config.json")));
  EXPECT_EQ(j.at("model_type"), "wiola");
  EXPECT_EQ(j.at("Hkv"), 2);
  EXPECT_EQ(j.at("num_key_value_heads"), 2);
  EXPECT_EQ(j.at("hidden_size"), 16);
  EXPECT_EQ(j.at("eps"), 1e-6);
  EXPECT_EQ(j.at("summary"), "sequence");
  EXPECT_FALSE(j.contains("init_std"));

  const ModelConfig back = read_hf_config(dir.file("config.json"));
  EXPECT_EQ(back.preset, "safetensors");
  EXPECT_EQ(model_differences(c, back, FieldSet::Stored), "");
  EXPECT_EQ(back.init_std, ModelConfig{}.init_std);
}

TEST(HfConfig, AFileWrittenBeforeTheTableStillLoads) {
  test::TempDir dir;
  test::write_text(dir.file("config.json"), R"({
  "H": 4, "Hkv": 2, "L": 4, "Lambda": 2, "T": 64, "V": 2048, "a_s": 0.1,
  "architectures": ["WiolaForCausalLM"], "atm": "causal", "canonical_names": [],
  "d": 64, "dA": 64, "dB": 256, "eps": 1e-06, "f_s": 0.01, "hidden_size": 64,
  "k_s": 8.0, "max_position_embeddings": 64, "model_type": "wiola",
  "num_attention_heads": 4, "num_hidden_layers": 4, "num_key_value_heads": 2,
  "summary": "causal", "tau": 0.92, "theta0": 10000.0, "tie_word_embeddings": true,
  "torch_dtype": "float32", "vocab_size": 2048
})");
  ModelConfig want = preset("wiola-mini");
  want.V = 2048;
  EXPECT_EQ(model_differences(want, read_hf_config(dir.file("config.json")), FieldSet::Stored), "");
}

// Wiola 13M: `arch` and its own fields (dff also as intermediate_size), none
// of the main family's.
TEST(HfConfig, Wiola13mRoundTrip) {
  test::TempDir dir;
  ModelConfig c = preset("wiola13m-tiny");
  c.alpha = 0.25;
  c.gate = GateSource::Post;
  write_hf_config(dir.file("config.json"), c, {"embed.weight"}, DType::F32);
  const auto j = nlohmann::json::parse(read_text_file(dir.file("config.json")));
  EXPECT_EQ(j.at("arch"), "wiola13m");
  EXPECT_EQ(j.at("dff"), 24);
  EXPECT_EQ(j.at("intermediate_size"), 24);
  EXPECT_EQ(j.at("gate"), "post");
  EXPECT_EQ(j.at("alpha"), 0.25);
  for (const char* k : {"dA", "dB", "k_s", "tau", "Lambda", "summary", "atm"})
    EXPECT_FALSE(j.contains(k)) << k;
  const ModelConfig back = read_hf_config(dir.file("config.json"));
  EXPECT_EQ(back.arch, Arch::Wiola13m);
  EXPECT_EQ(model_differences(c, back, FieldSet::Stored), "");
}

TEST(HfConfig, MissingFieldIsNamed) {
  test::TempDir dir;
  test::write_text(dir.file("config.json"), R"({"model_type": "wiola", "d": 64})");
  EXPECT_ERROR(read_hf_config(dir.file("config.json")), "config.json", "'L' not found");
}

}  // namespace
}  // namespace wiola
