// The Hugging Face files: config.json (the standard keys, the Wiola-only
// fields under their own names, each value once; both spellings read back),
// safetensors in fp32 and bf16, and the BPE tokenizer as tokenizer.json
// giving back the same tokenizer and the same ids.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/model_fields.hpp"
#include "core/text.hpp"
#include "io/h5.hpp"
#include "io/hf_tokenizer.hpp"
#include "io/safetensors.hpp"
#include "io/token_file.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

using json = nlohmann::json;

TEST(HfConfig, StandardKeysOnceAndTheWiolaFieldsUnderTheirOwnNames) {
  test::TempDir dir;
  ModelConfig c = preset("wiola-tiny");
  c.tau = 0.875;
  c.summary = SummaryMode::Sequence;
  c.atm = AtmMode::Off;
  c.init_std = 0.5;  // not an architecture field: not written
  HfConfigExtras x;
  x.names = {"embed.weight"};
  x.dtype = DType::BF16;
  x.bos_token_id = x.eos_token_id = 256;
  write_hf_config(dir.file("config.json"), c, x);
  const auto j = json::parse(read_text_file(dir.file("config.json")));
  EXPECT_EQ(j.at("model_type"), "wiola");
  EXPECT_EQ(j.at("architectures"), json::array({"WiolaForCausalLM"}));
  EXPECT_EQ(j.at("auto_map").at("AutoModelForCausalLM"), "modeling_wiola.WiolaForCausalLM");
  EXPECT_EQ(j.at("torch_dtype"), "bfloat16");
  EXPECT_EQ(j.at("tie_word_embeddings"), true);
  EXPECT_EQ(j.at("hidden_size"), 16);
  EXPECT_EQ(j.at("num_hidden_layers"), 5);
  EXPECT_EQ(j.at("num_attention_heads"), 4);
  EXPECT_EQ(j.at("num_key_value_heads"), 2);
  EXPECT_EQ(j.at("head_dim"), 4);
  EXPECT_EQ(j.at("vocab_size"), c.V);
  EXPECT_EQ(j.at("max_position_embeddings"), 16);
  EXPECT_EQ(j.at("rms_norm_eps"), 1e-6);
  EXPECT_EQ(j.at("rope_theta"), 10000.0);
  EXPECT_EQ(j.at("dsff_narrow_intermediate_size"), c.dA);
  EXPECT_EQ(j.at("dsff_wide_intermediate_size"), c.dB);
  EXPECT_EQ(j.at("bos_token_id"), 256);
  EXPECT_EQ(j.at("eos_token_id"), 256);
  EXPECT_EQ(j.at("tau"), 0.875);
  EXPECT_EQ(j.at("summary"), "sequence");
  EXPECT_EQ(j.at("Lambda"), 2);
  EXPECT_FALSE(j.contains("init_std"));
  // No field under two names.
  for (const char* twice : {"d", "L", "H", "Hkv", "V", "T", "eps", "theta0", "dA", "dB"})
    EXPECT_FALSE(j.contains(twice)) << twice;
  std::set<std::string> keys;
  for (const ModelField& f : model_fields())
    if (f.in(FieldSet::Stored)) {
      EXPECT_TRUE(keys.insert(f.hf_key ? f.hf_key : f.file_key).second);
    }

  const ModelConfig back = read_hf_config(dir.file("config.json"));
  EXPECT_EQ(back.preset, "safetensors");
  EXPECT_EQ(model_differences(c, back, FieldSet::Stored), "");
  EXPECT_EQ(back.init_std, ModelConfig{}.init_std);
}

TEST(HfConfig, AFileWrittenBeforeTheStandardNamesStillLoads) {
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

// Wiola 13M: `arch` and its own fields (dff as intermediate_size), none
// of the main family's.
TEST(HfConfig, Wiola13mRoundTrip) {
  test::TempDir dir;
  ModelConfig c = preset("wiola13m-tiny");
  c.alpha = 0.25;
  c.gate = GateSource::Post;
  HfConfigExtras x;
  x.names = {"embed.weight"};
  write_hf_config(dir.file("config.json"), c, x);
  const auto j = nlohmann::json::parse(read_text_file(dir.file("config.json")));
  EXPECT_EQ(j.at("arch"), "wiola13m");
  EXPECT_FALSE(j.contains("dff"));
  EXPECT_EQ(j.at("intermediate_size"), 24);
  EXPECT_EQ(j.at("gate"), "post");
  EXPECT_EQ(j.at("alpha"), 0.25);
  for (const char* k : {"dA", "dB", "k_s", "tau", "Lambda", "summary", "atm"})
    EXPECT_FALSE(j.contains(k)) << k;
  const ModelConfig back = read_hf_config(dir.file("config.json"));
  EXPECT_EQ(back.arch, Arch::Wiola13m);
  EXPECT_EQ(model_differences(c, back, FieldSet::Stored), "");
}

TEST(HfConfig, MissingFieldAndWrongHeadDimAreNamed) {
  test::TempDir dir;
  test::write_text(dir.file("config.json"), R"({"model_type": "wiola", "hidden_size": 64})");
  EXPECT_ERROR(read_hf_config(dir.file("config.json")), "config.json",
               "'num_hidden_layers' (or 'L') not found");
  test::TempDir dir2;
  ModelConfig c = preset("wiola-mini");
  c.V = 300;
  write_hf_config(dir2.file("config.json"), c, {});
  auto j = json::parse(read_text_file(dir2.file("config.json")));
  j["head_dim"] = 8;
  test::write_text(dir2.file("config.json"), j.dump());
  EXPECT_ERROR(read_hf_config(dir2.file("config.json")), "head_dim 8 is not hidden_size");
}

TEST(Safetensors, Bf16IsRoundedToNearestEven) {
  test::TempDir dir;
  const std::vector<double> v = {1.0, -2.5, 1.0 + 1.0 / 256, 1.0 + 3.0 / 512, 3.14159, 1e-30, 0.0};
  write_safetensors(dir.file("m.safetensors"), {{"w", {7}, v}}, DType::BF16, {{"format", "pt"}});
  const std::vector<SafeTensor> back = read_safetensors(dir.file("m.safetensors"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].data[0], 1.0);
  EXPECT_EQ(back[0].data[1], -2.5);
  EXPECT_EQ(back[0].data[2], 1.0);                // a tie: to the even mantissa
  EXPECT_EQ(back[0].data[3], 1.0 + 1.0 / 128);    // 3/4 of a unit in the last place: up
  EXPECT_NEAR(back[0].data[4], 3.14159, 3.14159 / 128);
  EXPECT_NEAR(back[0].data[5], 1e-30, 1e-32);
  EXPECT_EQ(back[0].data[6], 0.0);
}

// Text that exercises every rule of wiola-words-1: spaces before words, runs of
// blanks and tabs, digit groups, punctuation runs, non-ASCII letters and
// combining marks, a piece longer than 64 bytes, and NFC normalisation.
const char* const kSample =
    "Hello world!  It's 2024-05-17, 12345 items;\tok?\n\n  Zoë and Ångström, naïve café "
    "(e\xCC\x81 = \xC3\xA9).   End...\n"
    "Supercalifragilisticexpialidociouslyextraordinarilylongwordthatkeepsgoingonandon "
    "\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E "
    "\xE2\x80\x94 <|endoftext|> \t \t x";

TEST(HfTokenizer, TheEmbeddedTokenizerRoundTripsWithTheSameIds) {
  const h5::File f = h5::File::open_read(WIOLA_EMBEDDED_TRAIN);
  const std::string model = read_embedded_tokenizer(f);
  ASSERT_FALSE(model.empty());
  const BpeTokenizer tok = BpeTokenizer::parse(model, "embedded");
  const std::string text = hf_tokenizer_json(tok);
  const json j = json::parse(text);
  EXPECT_EQ(j.at("model").at("type"), "BPE");
  EXPECT_EQ(j.at("model").at("vocab").size(), std::size_t(tok.vocab_size()));
  EXPECT_EQ(j.at("model").at("vocab").at("\xC4\xA0"), 32);         // the space byte is spelled Ġ
  EXPECT_EQ(j.at("model").at("vocab").at("<|endoftext|>"), 256);
  EXPECT_EQ(j.at("added_tokens").size(), 4u);
  EXPECT_EQ(j.at("normalizer").at("type"), "NFC");

  const BpeTokenizer back = bpe_from_hf_tokenizer_json(text, "tokenizer.json");
  EXPECT_EQ(back.hash(), tok.hash());
  EXPECT_EQ(back.encode(kSample), tok.encode(kSample));
  EXPECT_EQ(back.decode(back.encode(kSample)), tok.decode(tok.encode(kSample)));

  const json cfg = json::parse(hf_tokenizer_config_json(tok, 64));
  EXPECT_EQ(cfg.at("eos_token"), "<|endoftext|>");
  EXPECT_EQ(cfg.at("model_max_length"), 64);
  EXPECT_EQ(cfg.at("tokenizer_class"), "PreTrainedTokenizerFast");
}

TEST(HfTokenizer, AForeignTokenizerJsonIsRefused) {
  const h5::File f = h5::File::open_read(WIOLA_EMBEDDED_TRAIN);
  json j = json::parse(hf_tokenizer_json(BpeTokenizer::parse(read_embedded_tokenizer(f), "e")));
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
  EXPECT_ERROR(bpe_from_hf_tokenizer_json(j.dump(), "tok.json"), "tok.json",
               "the pre-tokenizer is not wiola-words-1");
}

}  // namespace
}  // namespace wiola
