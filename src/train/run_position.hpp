#pragma once
// Where a run stands in the global sample order: the step it started at, the
// samples a resumed run had consumed before it, and its step budget. Every
// replica's share of a step, the tokens seen and a checkpoint's data position
// follow from these.
#include <cstdint>

namespace wiola {

struct RunPosition {
  std::int64_t start_step = 1;    // > 1 after --resume
  std::int64_t sample_base = 0;   // samples consumed before start_step
  std::int64_t total_steps = 0;   // the run ends after this step
  std::int64_t global_batch = 0;  // sequences per step, all replicas
  std::int64_t seq = 0;           // tokens per sequence

  std::int64_t tokens_per_step() const { return global_batch * seq; }
  std::int64_t budget_tokens() const { return total_steps * tokens_per_step(); }
  // The first sample of `step` in the global order.
  std::int64_t first_sample(std::int64_t step) const {
    return sample_base + (step - start_step) * global_batch;
  }
  // The first sample of replica `dp_index`'s share (of `dp`) of `step`.
  std::int64_t replica_first_sample(std::int64_t step, int dp_index, int dp) const {
    return first_sample(step) + std::int64_t(dp_index) * (global_batch / dp);
  }
  // Samples consumed once `step` is done (a checkpoint's data position).
  std::int64_t consumed_after(std::int64_t step) const { return first_sample(step + 1); }
  std::int64_t tokens_seen(std::int64_t step) const { return consumed_after(step) * seq; }
};

}  // namespace wiola
