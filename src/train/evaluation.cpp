#include "train/evaluation.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "model/param_store.hpp"
#include "pipeline/schedule.hpp"

namespace wiola {

double EvalTotals::perplexity() const { return std::exp(mean_loss()); }

namespace {

// One round of this replica's micro-batches: the run's mb is the global
// micro-batch (first + mb)·dp + r.
class RoundBatches final : public StageExecutor::MicrobatchSource {
 public:
  RoundBatches(const EvalSpec& spec, std::int64_t first, int dp, int r)
      : spec_(spec), first_(first), dp_(dp), r_(r) {}
  HostBatch microbatch(int mb) const override { return spec_.batch((first_ + mb) * dp_ + r_); }

 private:
  const EvalSpec& spec_;
  std::int64_t first_;
  int dp_, r_;
};

}  // namespace

EvalTotals evaluate(StageExecutor& executor, Backend& backend, const comm::ProcessGrid& grid,
                    comm::Communicator& world, const EvalSpec& spec) {
  const std::int64_t M = spec.microbatches;
  require(M >= 1, "evaluation needs at least one micro-batch");
  const int dp = grid.dp, r = grid.dp_index();
  // This replica's micro-batches: g = j·dp + r for j < mine.
  const std::int64_t mine = M > r ? (M - r + dp - 1) / dp : 0;
  // Slots [0, M): loss sums; [M, 2M): token counts. Only the last stage of
  // the owning replica writes a slot.
  std::vector<double> slots(std::size_t(2 * M), 0.0);
  for (std::int64_t first = 0, round = 0; first < mine; first += kEvalRound, ++round) {
    const int count = static_cast<int>(std::min<std::int64_t>(kEvalRound, mine - first));
    const RoundBatches batches(spec, first, dp, r);
    StageExecutor::Hooks hooks;
    hooks.batches = &batches;
    const StageExecutor::RunSpec run_spec{static_cast<int>(round), count, spec.micro_batch,
                                          spec.seq, /*training=*/false, 0.0};
    const StageExecutor::Result run = executor.run(
        pipeline::make_forward_schedule(grid.pp, grid.stage(), count, executor.chunks()), run_spec,
        hooks);
    if (!run.loss_sums.defined()) continue;  // not the last stage
    const std::vector<double> sums = to_host_f64(backend, run.loss_sums);
    for (int mb = 0; mb < count; ++mb) {
      const std::size_t g = std::size_t((first + mb) * dp + r);
      slots[g] = sums[std::size_t(mb)];
      slots[std::size_t(M) + g] = double(run.loss_tokens[std::size_t(mb)]);
    }
  }
  world.allreduce(std::span<double>(slots), comm::ReduceOp::Sum);
  EvalTotals t;
  for (std::int64_t g = 0; g < M; ++g) {
    t.loss_sum += slots[std::size_t(g)];
    t.tokens += slots[std::size_t(M + g)];
  }
  return t;
}

}  // namespace wiola
