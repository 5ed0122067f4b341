#pragma once
// The run's data, from DataOptions: the training and validation datasets
// (opened and checked once, before anything is allocated), what they hold for
// the start-up report, and, on the stages that read tokens, one feed each at
// this replica's share of every step.
#include <cstdint>
#include <memory>
#include <optional>

#include "comm/process_grid.hpp"
#include "io/token_dataset.hpp"
#include "train/batch_feed.hpp"
#include "train/data_summary.hpp"
#include "train/options.hpp"

namespace wiola {

class TrainingData {
 public:
  // Opens the datasets to check them (readable, one tokenizer) and sums them
  // up; throws wiola::Error naming the file at fault.
  TrainingData(const DataOptions& options, int seq);

  const DatasetSpec& train_spec() const { return train_; }
  bool has_validation() const { return val_.has_value(); }
  // The size of the training data's vocabulary (its tokenizer's).
  std::int64_t vocab_size() const { return vocab_; }
  const DataSummary& summary() const { return summary_; }
  void set_budget_tokens(std::int64_t tokens) { summary_.budget_tokens = tokens; }

  // Opens this replica's feeds; only the first and last stage read tokens.
  // Training samples shuffle with `seed`; validation keeps its order.
  void open_feeds(const comm::ProcessGrid& grid, const ParallelOptions& parallel,
                  std::uint64_t seed);
  bool has_feeds() const { return train_feed_ != nullptr; }
  const BatchFeed& train_feed() const { return *train_feed_; }
  // Validation micro-batch `g` of the global validation order.
  HostBatch validation_batch(std::int64_t g) const;

 private:
  int seq_;
  int prefetch_;  // --prefetch
  DatasetSpec train_;
  std::optional<DatasetSpec> val_;
  std::int64_t vocab_ = 0;
  DataSummary summary_;
  int micro_batch_ = 0;
  std::unique_ptr<BatchFeed> train_feed_, val_feed_;
};

}  // namespace wiola
