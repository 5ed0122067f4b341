#pragma once
// Host-side index maps that tell the attention kernel which keys each query
// may see, and how ATM merges and restores rows. One plan per layer and
// micro-batch; the layer uploads it to backend tensors.
//
//   plain   queries and keys are the T tokens; query t sees keys 0..t.
//   paper   (paper-literal ATM) the whole GCLA runs on the T' merged tokens:
//           rows 0..T'-1 of each block are groups, a merged token takes its
//           first member's position, and outputs are copied back to members;
//           no query sees an extra key row (key_extra is -1 throughout).
//   causal  (default ATM) queries stay one per token; key/value rows are the
//           T' groups followed by the unmerged first members of the P pairs
//           (T' + P = T). Query t sees every group whose members are all <= t;
//           the first member of a pair sees its own unmerged row instead of
//           its group, so no position ever sees a later token.
#include <cstdint>
#include <span>
#include <vector>

#include "core/model_config.hpp"  // SummaryMode, AtmMode

namespace wiola {

// Greedy left-to-right adjacent merge of one sequence: pair (t, t+1) when
// rho[t] > tau, then continue at t+2.
struct SequenceMerge {
  std::vector<std::int32_t> group_of;  // [T] group of each token
  std::vector<std::int32_t> first;     // [T'] first member of each group
  std::vector<std::int32_t> second;    // [T'] second member, or -1
  int pairs() const;
};
SequenceMerge greedy_adjacent_merge(std::span<const double> rho, double tau);

enum class PlanKind : std::uint8_t { Plain, Paper, Causal };

struct TokenPlan {
  PlanKind kind = PlanKind::Plain;
  int batch = 0, seq = 0;
  // Attention index (see AttentionIndex in backend.hpp).
  std::vector<std::int32_t> n_queries, key_prefix, key_extra, ctx_row;
  // SRPE positions of query rows and key/value rows, [B*T].
  std::vector<std::int32_t> pos_q, pos_kv;
  // Paper: normalised input -> merged rows. Causal: normalised input -> key/value rows.
  std::vector<std::int32_t> merge_a, merge_b;
  // Paper only: merged output rows -> token rows.
  std::vector<std::int32_t> unmerge;
  std::vector<std::int32_t> groups;  // ATM plans: [B] T' of each sequence
  std::int64_t merged_tokens = 0;    // Σ T' over the batch (B*T when nothing merges)
};

// ctx_row points at per-position summary rows (causal summaries) or one row
// per sequence (sequence summaries).
TokenPlan plain_plan(int batch, int seq, SummaryMode summary);
TokenPlan paper_plan(std::span<const SequenceMerge> merges, int seq, SummaryMode summary);
TokenPlan causal_plan(std::span<const SequenceMerge> merges, int seq, SummaryMode summary);
// The ATM plan of a micro-batch from rho [batch*seq] (row_cosine_next): each
// sequence's greedy_adjacent_merge, then the paper or causal plan. The
// reference of the backends' atm_plan op.
TokenPlan atm_plan(std::span<const double> rho, int batch, int seq, double tau, AtmMode mode,
                   SummaryMode summary);

// Cached decoding (model/cached_decoder.hpp): one sequence whose first `past`
// positions already sit in the key/value cache, followed by `n` new ones. The
// attention call sees a block of seq = past + n key rows; query rows 0..n-1
// are the new positions (row i is position past + i and sees keys
// 0..past + i), the remaining past rows are padding. ctx_row i is row i of the
// new positions' summaries (causal) or 0 (sequence). pos_q = pos_kv = past + i
// for the n new rows. With past = 0 this is plain_plan(1, n, summary).
TokenPlan decode_plan(int past, int n, SummaryMode summary);

}  // namespace wiola
