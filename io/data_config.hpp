#pragma once
// The data flags of a training run, turned into dataset specs for the
// training and the validation side.
//   train           --train-data: paths, globs, manifests (data_sources.hpp)
//   train_weights   --data-weights: one mixing weight per entry (optional)
//   val             --val-data: separate validation files, or
//   val_fraction    --val-fraction: hold out this fraction of the training
//                   files' documents (heldout_split.hpp); exclusive with val
//   split_seed      --split-seed: which documents are held out (default 0,
//                   independent of the training seed)
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/token_dataset.hpp"

namespace wiola {

struct DataConfig {
  std::vector<std::string> train;
  std::vector<double> train_weights;
  std::vector<std::string> val;
  double val_fraction = 0;
  std::uint64_t split_seed = 0;
};

DatasetSpec train_spec(const DataConfig& c);
// nullopt when the run has no validation data. Validation windows are drawn
// uniformly over all validation files (weights in a manifest are ignored).
std::optional<DatasetSpec> val_spec(const DataConfig& c);

// Validation must use the training data's tokenizer: an error naming the
// first validation file otherwise.
void require_same_tokenizer(const TokenDataset& train, const TokenDataset& val);

}  // namespace wiola
