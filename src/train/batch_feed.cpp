#include "train/batch_feed.hpp"

namespace wiola {

namespace {

HostBatch to_batch(const SampleReader& reader, std::int64_t first, int count) {
  const int T = reader.seq_len();
  const std::vector<std::int32_t> rows = reader.read(first, count);
  HostBatch b;
  b.batch = count;
  b.seq = T;
  b.inputs.resize(std::size_t(count) * T);
  b.targets.resize(std::size_t(count) * T);
  for (int i = 0; i < count; ++i) {
    const auto row = rows.begin() + std::ptrdiff_t(i) * (T + 1);
    std::copy(row, row + T, b.inputs.begin() + std::ptrdiff_t(i) * T);
    std::copy(row + 1, row + T + 1, b.targets.begin() + std::ptrdiff_t(i) * T);
  }
  return b;
}

}  // namespace

BatchFeed::BatchFeed(const DatasetSpec& spec, int seq, std::uint64_t seed, FeedOptions options)
    : reader_(std::make_unique<SampleReader>(spec, seq, seed, options.mix_block)) {
  const SampleReader* reader = reader_.get();
  prefetch_ = std::make_unique<Prefetcher<HostBatch>>(
      [reader](std::int64_t first, int count) { return to_batch(*reader, first, count); },
      options.prefetch);
}

BatchFeed::BatchFeed(const std::vector<std::string>& files, int seq, std::uint64_t seed)
    : BatchFeed(DatasetSpec::from_files(files), seq, seed) {}

HostBatch BatchFeed::samples(std::int64_t first, int count) const {
  return prefetch_->get(first, count);
}

void BatchFeed::set_access_pattern(std::int64_t period, std::int64_t offset, std::int64_t span) {
  prefetch_->set_pattern(period, offset, span);
}

}  // namespace wiola
