#pragma once
// CRC-32 (IEEE 802.3, the zlib/PNG polynomial) of files and buffers, computed
// by zlib: the checkpoint manifest records one per file so a truncated or
// corrupted checkpoint is recognised before it is loaded.
#include <cstddef>
#include <cstdint>
#include <string>

namespace wiola {

// The CRC of the bytes so far (`crc`, 0 for none) extended by `bytes` more;
// feeding a buffer in pieces gives the CRC of the whole.
std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t bytes);
// CRC-32 of a whole file; throws naming the file when it cannot be read.
std::uint32_t crc32_file(const std::string& path, std::uint64_t* bytes = nullptr);

}  // namespace wiola
