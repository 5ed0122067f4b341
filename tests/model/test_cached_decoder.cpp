// The papers' incremental-match claim: the cached decoder (one token at a
// time, or in chunks) gives the logits of the full forward — for causal
// summaries, Λ = 2 and 3, every layer — and its sequence-summary fallback
// (a full recompute per feed) equals the full forward of each prefix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/cached_decoder.hpp"
#include "ops/token_plan.hpp"
#include "model_test_util.hpp"

namespace wiola::test {
namespace {

// Logits [m, V] of the full forward (evaluation mode: ATM off) on `tokens`.
std::vector<double> full_logits(WholeModel& m, const std::vector<std::int32_t>& tokens) {
  Batch b;
  b.B = 1;
  b.T = static_cast<int>(tokens.size());
  b.inputs = tokens;
  b.targets = tokens;
  return m.logits(b, /*training=*/false);
}

// Feeds `tokens` in chunks of the given sizes (cycled); the logits of every position.
std::vector<double> cached_logits(WholeModel& m, CachedDecoder& dec,
                                  const std::vector<std::int32_t>& tokens,
                                  const std::vector<int>& chunks) {
  std::vector<double> out;
  std::size_t at = 0;
  for (std::size_t c = 0; at < tokens.size(); ++c) {
    const std::size_t n =
        std::min(std::size_t(chunks[c % chunks.size()]), tokens.size() - at);
    const Tensor logits = dec.feed(std::span<const std::int32_t>(tokens.data() + at, n));
    EXPECT_EQ(logits.rows(), std::int64_t(n));
    const std::vector<double> rows = to_host_f64(*m.be, logits);
    out.insert(out.end(), rows.begin(), rows.end());
    at += n;
  }
  return out;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

ModelConfig config_with(int lambda, SummaryMode summary = SummaryMode::Causal) {
  ModelConfig c = tiny_config(summary, AtmMode::Causal, /*tau=*/0.0);  // ATM would merge everything
  c.Lambda = lambda;
  return c;
}

struct Case {
  int lambda;
  DType dtype;
  double tol;
};

class CachedMatchesFull : public ::testing::TestWithParam<Case> {};

TEST_P(CachedMatchesFull, OneTokenAtATimeAndInChunks) {
  const Case k = GetParam();
  const ModelConfig c = config_with(k.lambda);
  WholeModel m(c, k.dtype);
  const std::vector<std::int32_t> tokens = random_tokens(std::size_t(c.T), c.V, 5);
  const std::vector<double> full = full_logits(m, tokens);
  CachedDecoder dec(*m.model);
  ASSERT_TRUE(dec.exact());
  for (const std::vector<int>& chunks :
       {std::vector<int>{1}, std::vector<int>{3}, std::vector<int>{5, 2, 1}, std::vector<int>{c.T}}) {
    dec.reset();
    const std::vector<double> cached = cached_logits(m, dec, tokens, chunks);
    const double diff = max_abs_diff(full, cached);
    EXPECT_LE(diff, k.tol) << "chunks of " << chunks.front() << ", Λ = " << k.lambda;
    std::printf("[cached] Λ = %d, %s, chunks of %d: largest |Δ logit| %.3g\n", k.lambda,
                std::string(dtype_name(k.dtype)).c_str(), chunks.front(), diff);
    EXPECT_EQ(dec.length(), c.T);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, CachedMatchesFull,
                         ::testing::Values(Case{2, DType::F64, 1e-10}, Case{3, DType::F64, 1e-10},
                                           Case{2, DType::F32, 1e-4}, Case{3, DType::F32, 1e-4}),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           return "Lambda" + std::to_string(p.param.lambda) + "_" +
                                  std::string(dtype_name(p.param.dtype));
                         });

// The same at wiola-mini's shapes (d 64, T 64, 4 layers): larger products,
// which BLAS may block differently for 1 row and for 64.
TEST(CachedDecoder, MatchesFullAtWiolaMiniShapes) {
  ModelConfig c = preset("wiola-mini");
  c.V = 300;
  for (DType dt : {DType::F64, DType::F32}) {
    WholeModel m(c, dt);
    const std::vector<std::int32_t> tokens = random_tokens(std::size_t(c.T), c.V, 8);
    const std::vector<double> full = full_logits(m, tokens);
    CachedDecoder dec(*m.model);
    for (const std::vector<int>& chunks : {std::vector<int>{1}, std::vector<int>{16, 7}}) {
      dec.reset();
      const double diff = max_abs_diff(full, cached_logits(m, dec, tokens, chunks));
      std::printf("[cached] wiola-mini, %s, chunks of %d: largest |Δ logit| %.3g\n",
                  std::string(dtype_name(dt)).c_str(), chunks.front(), diff);
      EXPECT_LE(diff, dt == DType::F64 ? 1e-10 : 1e-4);
    }
  }
}

// The last row of a feed alone, as generation asks for it.
TEST(CachedDecoder, LastOnlyIsTheLastRow) {
  const ModelConfig c = config_with(2);
  WholeModel m(c, DType::F64);
  const std::vector<std::int32_t> tokens = random_tokens(std::size_t(c.T), c.V, 9);
  const std::vector<double> full = full_logits(m, tokens);
  CachedDecoder dec(*m.model);
  const Tensor last = dec.feed(std::span<const std::int32_t>(tokens.data(), 7), true);
  ASSERT_EQ(last.rows(), 1);
  const std::vector<double> row = to_host_f64(*m.be, last);
  const std::vector<double> want(full.begin() + 6 * c.V, full.begin() + 7 * c.V);
  EXPECT_LE(max_abs_diff(row, want), 1e-10);
}

// Sequence summaries: no exact cache exists, so every feed recomputes the
// whole sequence; position m − 1 then equals the full forward over m tokens.
TEST(CachedDecoder, SequenceSummaryFallbackEqualsFullForward) {
  for (int lambda : {2, 3}) {
    const ModelConfig c = config_with(lambda, SummaryMode::Sequence);
    WholeModel m(c, DType::F64);
    const std::vector<std::int32_t> tokens = random_tokens(std::size_t(c.T), c.V, 11);
    CachedDecoder dec(*m.model);
    EXPECT_FALSE(dec.exact());
    std::size_t at = 0;
    for (int n : {3, 1, 1, 4, 1, 2}) {
      const Tensor got = dec.feed(std::span<const std::int32_t>(tokens.data() + at, std::size_t(n)));
      at += std::size_t(n);
      const std::vector<double> full =
          full_logits(m, std::vector<std::int32_t>(tokens.begin(), tokens.begin() + std::ptrdiff_t(at)));
      const std::vector<double> want(full.end() - std::ptrdiff_t(n) * c.V, full.end());
      EXPECT_LE(max_abs_diff(to_host_f64(*m.be, got), want), 1e-10)
          << "Λ = " << lambda << ", prefix of " << at;
    }
  }
}

// With causal summaries position t of the full forward does not depend on
// later tokens, so a decoder fed only a prefix gives the prefix's rows of the
// longer sequence's logits.
TEST(CachedDecoder, PrefixOfALongerSequence) {
  const ModelConfig c = config_with(2);
  WholeModel m(c, DType::F64);
  const std::vector<std::int32_t> tokens = random_tokens(std::size_t(c.T), c.V, 13);
  const std::vector<double> full = full_logits(m, tokens);
  CachedDecoder dec(*m.model);
  const std::vector<std::int32_t> prefix(tokens.begin(), tokens.begin() + 5);
  const std::vector<double> got = cached_logits(m, dec, prefix, {2});
  EXPECT_LE(max_abs_diff(got, std::vector<double>(full.begin(), full.begin() + 5 * c.V)), 1e-10);
}

TEST(CachedDecoder, RefusesPositionsPastTheContextAndUnknownTokens) {
  const ModelConfig c = config_with(2);
  WholeModel m(c, DType::F32);
  CachedDecoder dec(*m.model);
  const std::vector<std::int32_t> too_long(std::size_t(c.T) + 1, 1);
  EXPECT_THROW(dec.feed(too_long), Error);
  const std::vector<std::int32_t> bad{1, c.V};
  EXPECT_THROW(dec.feed(bad), Error);
  EXPECT_EQ(dec.length(), 0);
  const std::vector<std::int32_t> fill(std::size_t(c.T), 2);
  dec.feed(fill, true);
  const std::vector<std::int32_t> one{3};
  EXPECT_THROW(dec.feed(one), Error);
}

TEST(CachedDecoder, NeedsTheWholeModel) {
  const ModelConfig c = config_with(2);
  auto be = make_cpu_backend();
  StageModel part(*be, c, StageSpec{0, 2, true, false}, DType::F32);
  EXPECT_THROW(CachedDecoder{part}, Error);
}

TEST(TokenPlan, DecodePlanFromEmptyIsThePlainPlan) {
  for (SummaryMode mode : {SummaryMode::Causal, SummaryMode::Sequence}) {
    const TokenPlan a = decode_plan(0, 7, mode), b = plain_plan(1, 7, mode);
    EXPECT_EQ(a.n_queries, b.n_queries);
    EXPECT_EQ(a.key_prefix, b.key_prefix);
    EXPECT_EQ(a.key_extra, b.key_extra);
    EXPECT_EQ(a.ctx_row, b.ctx_row);
    EXPECT_EQ(a.pos_q, b.pos_q);
    EXPECT_EQ(a.pos_kv, b.pos_kv);
  }
  const TokenPlan p = decode_plan(4, 2, SummaryMode::Causal);
  EXPECT_EQ(p.n_queries, std::vector<std::int32_t>{2});
  EXPECT_EQ(p.key_prefix[0], 5);
  EXPECT_EQ(p.key_prefix[1], 6);
  EXPECT_EQ(p.pos_q, (std::vector<std::int32_t>{4, 5}));
  EXPECT_EQ(p.ctx_row[1], 1);
}

}  // namespace
}  // namespace wiola::test
