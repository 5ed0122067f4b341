#pragma once
// Forward-only evaluation through the pipeline, shared by the trainer's
// validation and wiola-eval. The evaluation is a list of M global
// micro-batches; global micro-batch g runs on data-parallel replica g mod dp,
// in forward-only schedules (pipeline::make_forward_schedule) through the
// StageExecutor, at most kEvalRound micro-batches per run so that the
// activations a stage has sent but not yet seen completed stay bounded. The
// loss sum and token count of every micro-batch are gathered into global
// order (one all-reduce in which each slot has one contributor, so it is
// exact) and added up in that order: the result is the same bits for every
// PP × DP layout that evaluates the same micro-batches.
#include <cstdint>
#include <functional>

#include "comm/communicator.hpp"
#include "comm/process_grid.hpp"
#include "pipeline/host_batch.hpp"
#include "pipeline/stage_executor.hpp"

namespace wiola {

inline constexpr int kEvalRound = 16;

struct EvalTotals {
  double loss_sum = 0;  // Σ per-token cross-entropy, nats
  double tokens = 0;    // counted target tokens
  double mean_loss() const { return tokens > 0 ? loss_sum / tokens : 0.0; }
  double perplexity() const;  // exp(mean loss)
};

struct EvalSpec {
  std::int64_t microbatches = 0;  // M, over all replicas
  int micro_batch = 0;            // sequences per micro-batch
  int seq = 0;                    // tokens per sequence
  // Global micro-batch g (asked on the first and last stage of its replica).
  std::function<HostBatch(std::int64_t g)> batch;
};

// Collective over `world`; every rank returns the totals.
EvalTotals evaluate(StageExecutor& executor, Backend& backend, const comm::ProcessGrid& grid,
                    comm::Communicator& world, const EvalSpec& spec);

}  // namespace wiola
