#pragma once
// Counter-based random numbers: every value is a pure function of
// (seed, stream key, index), so any rank can produce any element of any tensor
// without generating the ones before it. Used for initialisation and for the
// dataset's sample order.
#include <cmath>
#include <cstdint>
#include <string_view>

namespace wiola {

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// FNV-1a, 64 bit: the stream key of a parameter name.
constexpr std::uint64_t hash_name(std::string_view s) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ull;
  }
  return h;
}

constexpr std::uint64_t stream_key(std::uint64_t seed, std::uint64_t key) {
  return splitmix64(seed ^ splitmix64(key));
}

// Uniform in [0, 1) with 53 random bits.
inline double uniform01(std::uint64_t key, std::uint64_t index) {
  return static_cast<double>(splitmix64(key + splitmix64(index)) >> 11) * 0x1.0p-53;
}

// Standard normal by Box-Muller on two independent uniforms of this index.
inline double normal(std::uint64_t key, std::uint64_t index) {
  const double u1 = 1.0 - uniform01(key, 2 * index);  // (0, 1]
  const double u2 = uniform01(key, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace wiola
