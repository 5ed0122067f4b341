#pragma once
// Turns the global sample order into micro-batches. Sample g of the run (all
// ranks together) is window SampleOrder(seed).window(g); step s uses samples
// [s·G, (s+1)·G), and data-parallel rank r takes the contiguous share
// [s·G + r·G/dp, s·G + (r+1)·G/dp). The global batch of a step is therefore
// the same set of samples for any PP, DP, micro-batch size or ZeRO stage.
#include <cstdint>
#include <string>
#include <vector>

#include "io/sample_order.hpp"
#include "io/token_dataset.hpp"

namespace wiola {

struct HostBatch {
  int batch = 0, seq = 0;
  std::vector<std::int32_t> inputs;   // [batch * seq]
  std::vector<std::int32_t> targets;  // [batch * seq]
};

class BatchFeed {
 public:
  BatchFeed(const std::vector<std::string>& files, int seq, std::uint64_t seed);

  const TokenDataset& dataset() const { return data_; }
  // Samples [first, first + count) of the global order.
  HostBatch samples(std::int64_t first, int count) const;

 private:
  TokenDataset data_;
  SampleOrder order_;
};

}  // namespace wiola
