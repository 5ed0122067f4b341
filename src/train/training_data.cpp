#include "train/training_data.hpp"

#include "io/data_config.hpp"

namespace wiola {

namespace {

DataConfig data_config(const DataOptions& o) {
  return {o.train_files, o.data_weights, o.val_files, o.val_fraction, o.split_seed};
}

}  // namespace

TrainingData::TrainingData(const DataOptions& options, int seq)
    : seq_(seq),
      prefetch_(options.prefetch),
      train_(wiola::train_spec(data_config(options))),
      val_(wiola::val_spec(data_config(options))) {
  const TokenDataset probe(train_, seq);
  vocab_ = probe.vocab_size();
  summary_.train_files = train_.sources.all_files();
  summary_.train_tokens = probe.num_tokens();
  summary_.train_windows = probe.num_windows();
  if (val_) {
    const TokenDataset val(*val_, seq);
    require_same_tokenizer(probe, val);
    summary_.val_files = val_->sources.all_files();
    summary_.val_tokens = val.num_tokens();
    summary_.val_windows = val.num_windows();
    summary_.val_held_out = options.val_fraction > 0;
  }
}

void TrainingData::open_feeds(const comm::ProcessGrid& grid, const ParallelOptions& parallel,
                              std::uint64_t seed) {
  if (!grid.first_stage() && !grid.last_stage()) return;
  FeedOptions fo;
  fo.prefetch = prefetch_;
  // Training: replica r reads [r·G/dp, (r+1)·G/dp) of every step's G samples.
  train_feed_ = std::make_unique<BatchFeed>(train_, seq_, seed, fo);
  const std::int64_t share = parallel.global_batch / parallel.dp;
  train_feed_->set_access_pattern(parallel.global_batch, grid.dp_index() * share, share);
  micro_batch_ = parallel.micro_batch;
  if (val_) {
    // Validation: micro-batch g goes to replica g mod dp, in order.
    val_feed_ = std::make_unique<BatchFeed>(*val_, seq_, /*seed=*/0, fo);
    val_feed_->set_access_pattern(std::int64_t(parallel.dp) * parallel.micro_batch,
                                  std::int64_t(grid.dp_index()) * parallel.micro_batch,
                                  parallel.micro_batch);
  }
}

HostBatch TrainingData::validation_batch(std::int64_t g) const {
  return val_feed_->samples(g * micro_batch_, micro_batch_);
}

}  // namespace wiola
