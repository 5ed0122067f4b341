#pragma once
// Samples of the global order as token windows: sample g is window
// MixtureOrder(seed).window(g) of the dataset. Thread-safe (const reads).
#include <cstdint>
#include <vector>

#include "io/mixture_order.hpp"
#include "io/token_dataset.hpp"

namespace wiola {

class SampleReader {
 public:
  SampleReader(const DatasetSpec& spec, int seq_len, std::uint64_t seed,
               std::int64_t mix_block = kDefaultMixBlock);

  const TokenDataset& dataset() const { return data_; }
  int seq_len() const { return data_.seq_len(); }
  // Samples [first, first + count): count rows of seq_len + 1 tokens.
  std::vector<std::int32_t> read(std::int64_t first, int count) const;

 private:
  TokenDataset data_;
  MixtureOrder order_;
};

}  // namespace wiola
