#include "io/heldout_split.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace wiola {

std::uint64_t heldout_file_key(const std::string& path) {
  return hash_name(std::filesystem::path(path).filename().string());
}

bool is_heldout_document(std::uint64_t file_key, std::int64_t doc, const HeldOut& h) {
  require(h.fraction > 0 && h.fraction < 1, "held-out fraction ", h.fraction,
          " must be in (0, 1)");
  // fraction * 2^64 as an integer threshold; the fraction is < 1 so it fits.
  const auto threshold = static_cast<std::uint64_t>(std::ldexp(h.fraction, 64));
  const std::uint64_t x =
      splitmix64(file_key ^ splitmix64(h.seed ^ splitmix64(static_cast<std::uint64_t>(doc))));
  return x < threshold;
}

std::vector<TokenRun> split_runs(const h5::File& f, std::int64_t n_documents,
                                 std::int64_t n_tokens, const HeldOut& h, bool heldout) {
  const std::uint64_t key = heldout_file_key(f.path());
  const h5::Dataset offsets = f.dataset("doc_offsets");
  std::vector<TokenRun> runs;
  constexpr std::int64_t kChunk = 1 << 20;
  std::vector<std::uint64_t> buf;
  std::int64_t prev = -1;
  for (std::int64_t first = 0; first < n_documents; first += kChunk) {
    const std::int64_t n = std::min(kChunk, n_documents - first);
    buf.resize(static_cast<std::size_t>(n));
    offsets.read_range(first, n, buf.data());
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t d = first + i;
      const auto start = static_cast<std::int64_t>(buf[static_cast<std::size_t>(i)]);
      require(d > 0 || start == 0, f.path(), ": doc_offsets[0] is ", start, ", expected 0");
      require(d == 0 || (start > prev && start < n_tokens), f.path(), ": doc_offsets[", d,
              "] = ", buf[static_cast<std::size_t>(i)],
              " is not increasing or not below n_tokens (damaged file)");
      // The previous document ends here; the last one ends at n_tokens.
      if (d > 0 && is_heldout_document(key, d - 1, h) == heldout) {
        if (!runs.empty() && runs.back().start + runs.back().length == prev)
          runs.back().length += start - prev;
        else
          runs.push_back({prev, start - prev});
      }
      prev = start;
    }
  }
  if (n_documents > 0 && is_heldout_document(key, n_documents - 1, h) == heldout) {
    if (!runs.empty() && runs.back().start + runs.back().length == prev)
      runs.back().length += n_tokens - prev;
    else
      runs.push_back({prev, n_tokens - prev});
  }
  return runs;
}

}  // namespace wiola
