#include "train/batch_feed.hpp"

namespace wiola {

BatchFeed::BatchFeed(const std::vector<std::string>& files, int seq, std::uint64_t seed)
    : data_(files, seq), order_(seed, data_.num_windows()) {}

HostBatch BatchFeed::samples(std::int64_t first, int count) const {
  const int T = data_.seq_len();
  HostBatch b;
  b.batch = count;
  b.seq = T;
  b.inputs.resize(std::size_t(count) * T);
  b.targets.resize(std::size_t(count) * T);
  std::vector<std::int32_t> window(std::size_t(T) + 1);
  for (int i = 0; i < count; ++i) {
    data_.read_window(order_.window(first + i), window.data());
    std::copy(window.begin(), window.end() - 1, b.inputs.begin() + std::ptrdiff_t(i) * T);
    std::copy(window.begin() + 1, window.end(), b.targets.begin() + std::ptrdiff_t(i) * T);
  }
  return b;
}

}  // namespace wiola
