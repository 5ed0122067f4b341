// ATM's merge maps and attention index maps, checked on the host.
#include <gtest/gtest.h>

#include "ops/token_plan.hpp"

namespace wiola {
namespace {

TEST(GreedyMerge, PairsLeftToRightAndSkips) {
  // rho: 0.95 pairs (0,1); rho[1] is skipped; 0.5 no; 0.99 pairs (3,4); last alone.
  const std::vector<double> rho{0.95, 0.99, 0.5, 0.99, 0.1, -2};
  const SequenceMerge m = greedy_adjacent_merge(rho, 0.92);
  EXPECT_EQ(m.group_of, (std::vector<std::int32_t>{0, 0, 1, 2, 2, 3}));
  EXPECT_EQ(m.first, (std::vector<std::int32_t>{0, 2, 3, 5}));
  EXPECT_EQ(m.second, (std::vector<std::int32_t>{1, -1, 4, -1}));
  EXPECT_EQ(m.pairs(), 2);
}

TEST(GreedyMerge, ShortSequences) {
  EXPECT_EQ(greedy_adjacent_merge(std::vector<double>{-2}, -5).first.size(), 1u);
  EXPECT_EQ(greedy_adjacent_merge(std::vector<double>{}, 0).first.size(), 0u);
  EXPECT_EQ(greedy_adjacent_merge(std::vector<double>{1.0, -2}, 0.5).pairs(), 1);
}

TEST(GreedyMerge, ThresholdAboveOneMergesNothing) {
  const std::vector<double> rho{1.0, 1.0, 1.0, -2};
  EXPECT_EQ(greedy_adjacent_merge(rho, 1.0).pairs(), 0);
}

// Mean of the rows named by (a, b) — what merge_rows_fwd computes.
std::vector<double> merged(const std::vector<double>& x, std::int32_t a, std::int32_t b) {
  if (a < 0) return {0.0};
  return {b < 0 ? x[a] : 0.5 * (x[a] + x[b])};
}

TEST(TokenPlan, MergeThenUnmergeRestoresEqualPairs) {
  // Rows that are equal within each pair survive merge + unmerge exactly.
  const std::vector<double> rho{1, 0, 1, 0, 0, -2};
  const SequenceMerge m = greedy_adjacent_merge(rho, 0.5);
  const std::vector<double> x{3, 3, 7, 7, 1, 9};
  const TokenPlan p = paper_plan(std::vector<SequenceMerge>{m}, 6, SummaryMode::Causal);
  std::vector<double> xm(6);
  for (int r = 0; r < 6; ++r) xm[r] = merged(x, p.merge_a[r], p.merge_b[r])[0];
  std::vector<double> back(6);
  for (int t = 0; t < 6; ++t) back[t] = xm[p.unmerge[t]];
  EXPECT_EQ(back, x);
  EXPECT_EQ(p.n_queries[0], 4);
  EXPECT_EQ(p.merged_tokens, 4);
}

TEST(TokenPlan, PaperPlanUsesFirstMemberPositionsAndMergedOrderMask) {
  const SequenceMerge m = greedy_adjacent_merge(std::vector<double>{1, 0, 1, -2}, 0.5);
  // groups {0,1} {2,3}
  const TokenPlan p = paper_plan(std::vector<SequenceMerge>{m, m}, 4, SummaryMode::Causal);
  EXPECT_EQ(p.n_queries, (std::vector<std::int32_t>{2, 2}));
  EXPECT_EQ(p.pos_q[0], 0);
  EXPECT_EQ(p.pos_q[1], 2);
  EXPECT_EQ(p.key_prefix[0], 1);
  EXPECT_EQ(p.key_prefix[1], 2);
  EXPECT_EQ(p.ctx_row[4 + 1], 4 + 2);  // second sequence, group 1 reads summary row of t = 2
  EXPECT_EQ(p.merge_a[4], 4);
  EXPECT_EQ(p.merge_b[4], 5);
  EXPECT_EQ(p.unmerge[4 + 3], 4 + 1);
}

TEST(TokenPlan, CausalPlanNeverShowsAQueryALaterToken) {
  const std::vector<double> rho{0.9, 0.1, 0.9, 0.9, 0.2, 0.95, 0.3, 0.99, -2};
  const int T = static_cast<int>(rho.size());
  const SequenceMerge m = greedy_adjacent_merge(rho, 0.5);
  const TokenPlan p = causal_plan(std::vector<SequenceMerge>{m}, T, SummaryMode::Causal);
  // Members of every key/value row.
  auto members = [&](int r) {
    std::vector<int> v{p.merge_a[r]};
    if (p.merge_b[r] >= 0) v.push_back(p.merge_b[r]);
    return v;
  };
  for (int t = 0; t < T; ++t) {
    std::vector<int> seen;
    for (int r = 0; r < p.key_prefix[t]; ++r)
      for (int u : members(r)) seen.push_back(u);
    if (p.key_extra[t] >= 0)
      for (int u : members(p.key_extra[t])) seen.push_back(u);
    std::sort(seen.begin(), seen.end());
    // Exactly the tokens 0..t, each once: causal and nothing lost.
    std::vector<int> expect(t + 1);
    for (int u = 0; u <= t; ++u) expect[u] = u;
    EXPECT_EQ(seen, expect) << "query " << t;
  }
  EXPECT_EQ(p.merged_tokens, static_cast<std::int64_t>(m.first.size()));
}

TEST(TokenPlan, CausalPlanWithoutMergesIsThePlainPlan) {
  const std::vector<double> rho{0.1, 0.2, 0.3, -2};
  const SequenceMerge m = greedy_adjacent_merge(rho, 0.5);
  const TokenPlan c = causal_plan(std::vector<SequenceMerge>{m}, 4, SummaryMode::Sequence);
  const TokenPlan p = plain_plan(1, 4, SummaryMode::Sequence);
  EXPECT_EQ(c.key_prefix, p.key_prefix);
  EXPECT_EQ(c.key_extra, p.key_extra);
  EXPECT_EQ(c.ctx_row, p.ctx_row);
  EXPECT_EQ(c.pos_kv, p.pos_kv);
}

}  // namespace
}  // namespace wiola
