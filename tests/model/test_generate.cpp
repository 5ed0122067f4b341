// Sampling and the generation loop: greedy and its limits (top-k 1, a tiny
// top-p), repeatable draws, the cached loop against a full recompute at every
// step (the same tokens, across window shifts), stop ids, bad options.
#include <gtest/gtest.h>

#include <map>

#include "model/generate.hpp"
#include "model_test_util.hpp"

namespace wiola::test {
namespace {

const std::vector<double> kLogits{0.5, 2.0, -1.0, 1.9, 0.0, 2.0};

TEST(Sampler, GreedyTakesTheFirstLargest) {
  SamplingOptions o;
  o.greedy = true;
  EXPECT_EQ(Sampler(o).pick(kLogits, 0), 1);
  o.greedy = false;
  o.temperature = 0;
  EXPECT_EQ(Sampler(o).pick(kLogits, 3), 1);
}

TEST(Sampler, TopKOneAndATinyTopPAreGreedy) {
  SamplingOptions o;
  o.top_k = 1;
  for (std::uint64_t s = 0; s < 20; ++s) EXPECT_EQ(Sampler(o).pick(kLogits, s), 1);
  o.top_k = 0;
  o.top_p = 1e-9;
  for (std::uint64_t s = 0; s < 20; ++s) EXPECT_EQ(Sampler(o).pick(kLogits, s), 1);
}

TEST(Sampler, DrawsFollowTheSoftmaxAndRepeatWithTheSeed) {
  SamplingOptions o;
  o.seed = 3;
  o.top_k = 3;  // ids 1, 5, 3
  const Sampler a(o), b(o);
  std::map<int, int> counts;
  const int n = 20000;
  for (int s = 0; s < n; ++s) {
    const int id = a.pick(kLogits, std::uint64_t(s));
    EXPECT_EQ(id, b.pick(kLogits, std::uint64_t(s)));
    ++counts[id];
  }
  EXPECT_EQ(counts.size(), 3u);
  const double z = std::exp(2.0) * 2 + std::exp(1.9);
  EXPECT_NEAR(counts[3] / double(n), std::exp(1.9) / z, 0.015);
  EXPECT_NEAR(counts[1] / double(n), std::exp(2.0) / z, 0.015);
}

TEST(Sampler, NeverDrawsAnIdPastTheVocabularyLimit) {
  SamplingOptions o;
  o.vocab = 3;  // ids 0, 1, 2: the largest logit (id 5) is out of reach
  o.greedy = true;
  EXPECT_EQ(Sampler(o).pick(kLogits, 0), 1);
  o.greedy = false;
  for (std::uint64_t s = 0; s < 200; ++s) EXPECT_LT(Sampler(o).pick(kLogits, s), 3);
}

TEST(Sampler, RefusesBadOptions) {
  SamplingOptions o;
  o.top_p = 0;
  EXPECT_THROW(Sampler{o}, Error);
  o = {};
  o.temperature = -1;
  EXPECT_THROW(Sampler{o}, Error);
  o = {};
  o.top_k = -2;
  EXPECT_THROW(Sampler{o}, Error);
  o = {};
  o.max_new_tokens = -1;
  EXPECT_THROW(Sampler{o}, Error);
  const std::vector<double> nan{0.0, std::nan("")};
  EXPECT_THROW(Sampler(SamplingOptions{}).pick(nan, 0), Error);
}

std::vector<std::int32_t> run(CachedDecoder& dec, const std::vector<std::int32_t>& prompt,
                              SamplingOptions o, GenerationStats* stats = nullptr) {
  std::vector<std::int32_t> out;
  const GenerationStats st = generate(dec, prompt, o, [&](std::int32_t id) { out.push_back(id); });
  if (stats) *stats = st;
  EXPECT_EQ(st.new_tokens, std::int64_t(out.size()));
  return out;
}

// 40 tokens from a T = 12 model: the window moves several times; the cached
// loop and the full recompute at every step give the same tokens.
TEST(Generate, CachedEqualsRecomputeAcrossWindowShifts) {
  for (SummaryMode mode : {SummaryMode::Causal, SummaryMode::Sequence}) {
    ModelConfig c = tiny_config(mode);
    c.init_std = 0.5;  // confident logits: no near-ties for rounding to flip
    WholeModel m(c, DType::F64);
    CachedDecoder dec(*m.model);
    SamplingOptions o;
    o.max_new_tokens = 40;
    o.seed = 17;
    o.temperature = 0.8;
    const std::vector<std::int32_t> prompt = random_tokens(5, c.V, 2);
    GenerationStats cached_stats;
    const auto cached = run(dec, prompt, o, &cached_stats);
    o.recompute = true;
    const auto again = run(dec, prompt, o);
    EXPECT_EQ(cached, again);
    EXPECT_EQ(cached.size(), 40u);
    EXPECT_GE(cached_stats.window_shifts, 5);
  }
}

TEST(Generate, GreedyIsDeterministicAndStopsAtAStopId) {
  const ModelConfig c = tiny_config();
  WholeModel m(c, DType::F32);
  CachedDecoder dec(*m.model);
  SamplingOptions o;
  o.greedy = true;
  o.max_new_tokens = 10;
  const std::vector<std::int32_t> prompt{1, 2, 3};
  const auto a = run(dec, prompt, o), b = run(dec, prompt, o);
  EXPECT_EQ(a, b);
  o.stop_ids = {a[3]};
  GenerationStats st;
  const auto stopped = run(dec, prompt, o, &st);
  EXPECT_TRUE(st.stopped);
  EXPECT_EQ(stopped.back(), a[3]);
  EXPECT_LE(stopped.size(), 4u);
}

// A prompt longer than the context keeps its last T tokens.
TEST(Generate, LongPromptKeepsItsTail) {
  const ModelConfig c = tiny_config();
  WholeModel m(c, DType::F64);
  CachedDecoder dec(*m.model);
  SamplingOptions o;
  o.greedy = true;
  o.max_new_tokens = 1;
  const std::vector<std::int32_t> longer = random_tokens(std::size_t(c.T) + 7, c.V, 4);
  const std::vector<std::int32_t> tail(longer.end() - c.T, longer.end());
  EXPECT_EQ(run(dec, longer, o), run(dec, tail, o));
  EXPECT_THROW(run(dec, {}, o), Error);
}

}  // namespace
}  // namespace wiola::test
