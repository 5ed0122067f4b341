#include "io/sample_reader.hpp"

#include "core/error.hpp"

namespace wiola {

namespace {

MixtureOrder make_order(const TokenDataset& d, std::uint64_t seed, std::int64_t block) {
  std::vector<std::int64_t> first, windows;
  std::vector<double> weights;
  for (std::size_t c = 0; c < d.num_components(); ++c) {
    first.push_back(d.component_first_window(c));
    windows.push_back(d.component_windows(c));
    weights.push_back(d.component_weight(c));
  }
  return MixtureOrder(seed, std::move(first), std::move(windows), std::move(weights), block);
}

}  // namespace

SampleReader::SampleReader(const DatasetSpec& spec, int seq_len, std::uint64_t seed,
                           std::int64_t mix_block)
    : data_(spec, seq_len), order_(make_order(data_, seed, mix_block)) {}

std::vector<std::int32_t> SampleReader::read(std::int64_t first, int count) const {
  require(count >= 0 && first >= 0, "sample reader: bad range [", first, ", +", count, ")");
  const std::size_t row = static_cast<std::size_t>(data_.seq_len()) + 1;
  std::vector<std::int32_t> out(row * static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i)
    data_.read_window(order_.window(first + i), out.data() + row * static_cast<std::size_t>(i));
  return out;
}

}  // namespace wiola
