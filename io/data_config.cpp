#include "io/data_config.hpp"

#include "core/error.hpp"

namespace wiola {

namespace {

void check(const DataConfig& c) {
  require(!c.train.empty(), "--train-data: no training files");
  require(c.val_fraction >= 0 && c.val_fraction < 1, "--val-fraction must be in [0, 1), got ",
          c.val_fraction);
  require(c.val_fraction == 0 || c.val.empty(),
          "--val-fraction and --val-data are exclusive: hold out documents of the training "
          "files, or give separate validation files");
}

// Validation windows are drawn uniformly: one component of every file.
DataSources unweighted(DataSources s) {
  if (!s.weighted && s.components.size() == 1) return s;
  DataComponent all;
  all.name = "all";
  all.files = s.all_files();
  DataSources out;
  out.components = {std::move(all)};
  return out;
}

}  // namespace

DatasetSpec train_spec(const DataConfig& c) {
  check(c);
  DatasetSpec s;
  s.sources = resolve_data_sources(c.train, c.train_weights);
  if (c.val_fraction > 0) {
    s.split = DataSplit::Train;
    s.heldout = {c.val_fraction, c.split_seed};
  }
  return s;
}

std::optional<DatasetSpec> val_spec(const DataConfig& c) {
  check(c);
  if (c.val_fraction > 0) {
    DatasetSpec s;
    s.sources = unweighted(resolve_data_sources(c.train));
    s.split = DataSplit::HeldOut;
    s.heldout = {c.val_fraction, c.split_seed};
    return s;
  }
  if (c.val.empty()) return std::nullopt;
  DatasetSpec s;
  s.sources = unweighted(resolve_data_sources(c.val));
  return s;
}

void require_same_tokenizer(const TokenDataset& train, const TokenDataset& val) {
  require(val.tokenizer() == train.tokenizer() && val.tokenizer_hash() == train.tokenizer_hash() &&
              val.vocab_size() == train.vocab_size() && val.eod_id() == train.eod_id(),
          val.file_path(0), ": the validation data's tokenizer '", val.tokenizer(), "' (hash ",
          val.tokenizer_hash(), ", vocab_size ", val.vocab_size(), ", eod_id ", val.eod_id(),
          ") differs from the training data's '", train.tokenizer(), "' (hash ",
          train.tokenizer_hash(), ", vocab_size ", train.vocab_size(), ", eod_id ",
          train.eod_id(), ")");
}

}  // namespace wiola
