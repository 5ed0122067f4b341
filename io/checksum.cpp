#include "io/checksum.hpp"

#include <zlib.h>

#include <fstream>
#include <vector>

#include "core/error.hpp"

namespace wiola {

std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t bytes) {
  // zlib's crc32 of no data is its initial value, not `crc`: keep a running value.
  if (bytes == 0) return crc;
  return static_cast<std::uint32_t>(
      ::crc32_z(crc, static_cast<const Bytef*>(data), static_cast<z_size_t>(bytes)));
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
