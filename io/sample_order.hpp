#pragma once
// The order in which training windows are visited. Global sample g (counted
// over the whole run, all ranks together) maps to epoch e = g / n and slot
// j = g % n, and to window perm_{seed,e}(j), a seeded pseudo-random bijection
// of [0, n). A pure function: no state, identical on every rank whatever the
// data-parallel degree, and resumable from any sample index.
#include <cstdint>

namespace wiola {

class SampleOrder {
 public:
  SampleOrder(std::uint64_t seed, std::int64_t n_windows);

  std::int64_t n_windows() const { return n_; }
  std::int64_t window(std::int64_t global_sample) const;
  // The permutation of one epoch, slot j in [0, n).
  std::int64_t permute(std::int64_t epoch, std::int64_t j) const;

 private:
  std::uint64_t seed_;
  std::int64_t n_;
  int half_bits_;          // the Feistel network works on 2 * half_bits_ bits
  std::uint64_t half_mask_;
};

}  // namespace wiola
