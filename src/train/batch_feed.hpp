#pragma once
// Turns the global sample order into micro-batches. Sample g of the run (all
// ranks together) is window MixtureOrder(seed).window(g) (io/mixture_order.hpp;
// with one component, SampleOrder(seed).window(g)); step s uses samples
// [s·G, (s+1)·G), and data-parallel rank r takes the contiguous share
// [s·G + r·G/dp, s·G + (r+1)·G/dp). The global batch of a step is therefore
// the same set of samples for any PP, DP, micro-batch size or ZeRO stage, and
// a run resumed at step s needs nothing but s.
//
// A background thread reads the next micro-batches ahead (io/prefetcher.hpp);
// what samples() returns does not depend on it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/prefetcher.hpp"
#include "pipeline/host_batch.hpp"
#include "io/sample_reader.hpp"
#include "io/token_dataset.hpp"

namespace wiola {

struct FeedOptions {
  int prefetch = 2;  // micro-batches read ahead (0: none, every read in the caller)
  std::int64_t mix_block = kDefaultMixBlock;
};

class BatchFeed {
 public:
  BatchFeed(const DatasetSpec& spec, int seq, std::uint64_t seed, FeedOptions options = {});
  // Entries (paths, globs, manifests), every document, default options.
  BatchFeed(const std::vector<std::string>& files, int seq, std::uint64_t seed);

  const TokenDataset& dataset() const { return reader_->dataset(); }
  const SampleReader& reader() const { return *reader_; }
  // Samples [first, first + count) of the global order.
  HostBatch samples(std::int64_t first, int count) const;
  // Optional: this rank reads samples [s·period + offset, s·period + offset +
  // span) for s = 0, 1, ... (train: period G, offset r·G/dp, span G/dp), so
  // prefetching is exact from the first step. Without it reads are assumed
  // contiguous.
  void set_access_pattern(std::int64_t period, std::int64_t offset, std::int64_t span);
  Prefetcher<HostBatch>::Stats prefetch_stats() const { return prefetch_->stats(); }

 private:
  std::unique_ptr<SampleReader> reader_;
  std::unique_ptr<Prefetcher<HostBatch>> prefetch_;
};

}  // namespace wiola
