#include "io/checksum.hpp"

#include <array>
#include <fstream>
#include <vector>

#include "core/error.hpp"

namespace wiola {

namespace {

std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

}  // namespace

std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t bytes) {
  static const std::array<std::uint32_t, 256> table = make_table();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < bytes; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::uint32_t crc32_file(const std::string& path, std::uint64_t* bytes) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), path, ": cannot be read");
  std::vector<char> buf(1 << 20);
  std::uint32_t crc = 0;
  std::uint64_t total = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    crc = crc32_update(crc, buf.data(), n);
    total += n;
  }
  require(in.eof(), path, ": read error");
  if (bytes) *bytes = total;
  return crc;
}

}  // namespace wiola
