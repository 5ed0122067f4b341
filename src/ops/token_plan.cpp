#include "ops/token_plan.hpp"

#include "core/error.hpp"

namespace wiola {

int SequenceMerge::pairs() const {
  int n = 0;
  for (auto s : second) n += s >= 0;
  return n;
}

SequenceMerge greedy_adjacent_merge(std::span<const double> rho, double tau) {
  const int T = static_cast<int>(rho.size());
  SequenceMerge m;
  m.group_of.assign(T, -1);
  for (int t = 0; t < T;) {
    const auto g = static_cast<std::int32_t>(m.first.size());
    m.group_of[t] = g;
    m.first.push_back(t);
    if (t + 1 < T && rho[t] > tau) {
      m.group_of[t + 1] = g;
      m.second.push_back(t + 1);
      t += 2;
    } else {
      m.second.push_back(-1);
      t += 1;
    }
  }
  return m;
}

namespace {

TokenPlan empty_plan(PlanKind kind, int batch, int seq) {
  TokenPlan p;
  p.kind = kind;
  p.batch = batch;
  p.seq = seq;
  const std::size_t n = static_cast<std::size_t>(batch) * seq;
  p.n_queries.assign(batch, seq);
  p.key_prefix.assign(n, 0);
  p.key_extra.assign(n, -1);
  p.ctx_row.assign(n, 0);
  p.pos_q.assign(n, 0);
  p.pos_kv.assign(n, 0);
  return p;
}

std::int32_t ctx_row_of(SummaryMode summary, int b, int seq, int position) {
  return summary == SummaryMode::Causal ? b * seq + position : b;
}

}  // namespace

TokenPlan plain_plan(int batch, int seq, SummaryMode summary) {
  TokenPlan p = empty_plan(PlanKind::Plain, batch, seq);
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t < seq; ++t) {
      const std::size_t i = static_cast<std::size_t>(b) * seq + t;
      p.key_prefix[i] = t + 1;
      p.ctx_row[i] = ctx_row_of(summary, b, seq, t);
      p.pos_q[i] = p.pos_kv[i] = t;
    }
  p.merged_tokens = std::int64_t(batch) * seq;
  return p;
}

TokenPlan decode_plan(int past, int n, SummaryMode summary) {
  require(past >= 0 && n >= 1, "decode_plan: ", n, " new positions after ", past);
  TokenPlan p = empty_plan(PlanKind::Plain, 1, past + n);
  p.n_queries[0] = n;
  p.pos_q.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const std::size_t r = static_cast<std::size_t>(i);
    p.key_prefix[r] = past + i + 1;
    p.ctx_row[r] = summary == SummaryMode::Causal ? i : 0;
    p.pos_q[r] = past + i;
  }
  p.pos_kv = p.pos_q;
  p.merged_tokens = n;
  return p;
}

TokenPlan paper_plan(std::span<const SequenceMerge> merges, int seq, SummaryMode summary) {
  const int batch = static_cast<int>(merges.size());
  TokenPlan p = empty_plan(PlanKind::Paper, batch, seq);
  const std::size_t n = static_cast<std::size_t>(batch) * seq;
  p.merge_a.assign(n, -1);
  p.merge_b.assign(n, -1);
  p.unmerge.assign(n, -1);
  p.groups.assign(batch, 0);
  for (int b = 0; b < batch; ++b) {
    const SequenceMerge& m = merges[b];
    require(static_cast<int>(m.group_of.size()) == seq, "paper_plan: merge map of length ",
            m.group_of.size(), " for seq ", seq);
    const int groups = static_cast<int>(m.first.size());
    const std::int32_t base = b * seq;
    p.n_queries[b] = groups;
    for (int k = 0; k < groups; ++k) {
      const std::size_t r = static_cast<std::size_t>(base) + k;
      p.merge_a[r] = base + m.first[k];
      p.merge_b[r] = m.second[k] >= 0 ? base + m.second[k] : -1;
      p.key_prefix[r] = k + 1;  // causal mask in merged order
      p.pos_q[r] = p.pos_kv[r] = m.first[k];
      p.ctx_row[r] = ctx_row_of(summary, b, seq, m.first[k]);
    }
    for (int t = 0; t < seq; ++t) p.unmerge[static_cast<std::size_t>(base) + t] = base + m.group_of[t];
    p.groups[b] = groups;
    p.merged_tokens += groups;
  }
  return p;
}

TokenPlan causal_plan(std::span<const SequenceMerge> merges, int seq, SummaryMode summary) {
  const int batch = static_cast<int>(merges.size());
  TokenPlan p = empty_plan(PlanKind::Causal, batch, seq);
  const std::size_t n = static_cast<std::size_t>(batch) * seq;
  p.merge_a.assign(n, -1);
  p.merge_b.assign(n, -1);
  p.groups.assign(batch, 0);
  for (int b = 0; b < batch; ++b) {
    const SequenceMerge& m = merges[b];
    require(static_cast<int>(m.group_of.size()) == seq, "causal_plan: merge map of length ",
            m.group_of.size(), " for seq ", seq);
    const int groups = static_cast<int>(m.first.size());
    const std::int32_t base = b * seq;
    // Key/value rows: the groups, then one unmerged row per pair's first member.
    int extra = groups;
    std::vector<std::int32_t> extra_row_of(seq, -1);
    for (int k = 0; k < groups; ++k) {
      const std::size_t r = static_cast<std::size_t>(base) + k;
      p.merge_a[r] = base + m.first[k];
      p.merge_b[r] = m.second[k] >= 0 ? base + m.second[k] : -1;
      p.pos_kv[r] = m.first[k];
      if (m.second[k] >= 0) {
        const std::size_t e = static_cast<std::size_t>(base) + extra;
        p.merge_a[e] = base + m.first[k];
        p.pos_kv[e] = m.first[k];
        extra_row_of[m.first[k]] = extra++;
      }
    }
    require(extra == seq, "causal_plan: ", extra, " key rows for ", seq, " tokens");
    for (int t = 0; t < seq; ++t) {
      const std::size_t i = static_cast<std::size_t>(base) + t;
      const int g = m.group_of[t];
      p.pos_q[i] = t;
      p.ctx_row[i] = ctx_row_of(summary, b, seq, t);
      if (extra_row_of[t] >= 0) {  // first member of a pair: its group is not complete yet
        p.key_prefix[i] = g;
        p.key_extra[i] = extra_row_of[t];
      } else {
        p.key_prefix[i] = g + 1;
      }
    }
    p.groups[b] = groups;
    p.merged_tokens += groups;
  }
  return p;
}

TokenPlan atm_plan(std::span<const double> rho, int batch, int seq, double tau, AtmMode mode,
                   SummaryMode summary) {
  require(mode != AtmMode::Off, "atm_plan: ATM is off");
  require(batch >= 0 && seq > 0 && rho.size() == std::size_t(batch) * std::size_t(seq),
          "atm_plan: ", rho.size(), " similarities for ", batch, " sequences of ", seq);
  std::vector<SequenceMerge> merges;
  merges.reserve(batch);
  for (int b = 0; b < batch; ++b)
    merges.push_back(greedy_adjacent_merge(rho.subspan(std::size_t(b) * seq, seq), tau));
  return mode == AtmMode::Paper ? paper_plan(merges, seq, summary)
                                : causal_plan(merges, seq, summary);
}

}  // namespace wiola
