#include "io/sample_order.hpp"

#include "core/error.hpp"
#include "core/rng.hpp"

namespace wiola {

namespace {
constexpr int kRounds = 4;
}

SampleOrder::SampleOrder(std::uint64_t seed, std::int64_t n_windows)
    : seed_(seed), n_(n_windows), half_bits_(1) {
  require(n_windows > 0, "sample order: the dataset has no windows");
  // Smallest even bit width 2h with 2^(2h) >= n: the domain is < 4n, so cycle
  // walking takes fewer than 4 steps on average.
  while (half_bits_ < 32 && (std::uint64_t{1} << (2 * half_bits_)) < static_cast<std::uint64_t>(n_))
    ++half_bits_;
  half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
}

std::int64_t SampleOrder::window(std::int64_t global_sample) const {
  require(global_sample >= 0, "sample order: negative sample index ", global_sample);
  return permute(global_sample / n_, global_sample % n_);
}

std::int64_t SampleOrder::permute(std::int64_t epoch, std::int64_t j) const {
  require(j >= 0 && j < n_, "sample order: slot ", j, " is outside [0, ", n_, ")");
  if (n_ == 1) return 0;
  std::uint64_t keys[kRounds];
  const std::uint64_t epoch_key =
      splitmix64(splitmix64(seed_) ^ splitmix64(static_cast<std::uint64_t>(epoch)));
  for (int r = 0; r < kRounds; ++r) keys[r] = splitmix64(epoch_key + static_cast<std::uint64_t>(r));
  // A balanced Feistel network is a bijection of [0, 2^(2h)); walking the cycle
  // until the value falls in [0, n) restricts it to a bijection of [0, n).
  std::uint64_t x = static_cast<std::uint64_t>(j);
  do {
    std::uint64_t left = x >> half_bits_, right = x & half_mask_;
    for (int r = 0; r < kRounds; ++r) {
      const std::uint64_t f = splitmix64(keys[r] ^ right) & half_mask_;
      const std::uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << half_bits_) | right;
  } while (x >= static_cast<std::uint64_t>(n_));
  return static_cast<std::int64_t>(x);
}

}  // namespace wiola
