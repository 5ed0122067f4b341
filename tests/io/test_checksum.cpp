// CRC-32 of checkpoint files: the standard check value, pieces agreeing with
// the whole, and files agreeing with buffers (zlib computes it; the values
// are those the hand-written table gave, so older checkpoints still verify).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "io/checksum.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

std::vector<unsigned char> pattern(std::size_t n) {
  std::vector<unsigned char> v(n);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<unsigned char>(x >> 24);
  }
  return v;
}

TEST(Crc32, CheckValue) {
  const char* s = "123456789";
  EXPECT_EQ(crc32_update(0, s, std::strlen(s)), 0xCBF43926u);
  EXPECT_EQ(crc32_update(0, "", 0), 0u);
  EXPECT_EQ(crc32_update(0xCBF43926u, nullptr, 0), 0xCBF43926u);  // nothing added
}

TEST(Crc32, LargeBufferInPiecesEqualsTheWhole) {
  const std::vector<unsigned char> v = pattern((std::size_t(48) << 20) + 7);  // 48 MiB and a bit
  const std::uint32_t whole = crc32_update(0, v.data(), v.size());
  for (std::size_t piece : {std::size_t(1) << 20, std::size_t(4093), std::size_t(3) << 22}) {
    std::uint32_t crc = 0;
    for (std::size_t at = 0; at < v.size(); at += piece)
      crc = crc32_update(crc, v.data() + at, std::min(piece, v.size() - at));
    EXPECT_EQ(crc, whole) << "pieces of " << piece;
  }
}

TEST(Crc32, FileEqualsBuffer) {
  test::TempDir dir;
  const std::vector<unsigned char> v = pattern((std::size_t(5) << 20) / 2 + 3);  // not a whole MiB
  test::write_text(dir.file("f.bin"), std::string(v.begin(), v.end()));
  std::uint64_t bytes = 0;
  EXPECT_EQ(crc32_file(dir.file("f.bin"), &bytes), crc32_update(0, v.data(), v.size()));
  EXPECT_EQ(bytes, v.size());
  test::write_text(dir.file("empty"), "");
  EXPECT_EQ(crc32_file(dir.file("empty"), &bytes), 0u);
  EXPECT_EQ(bytes, 0u);
  EXPECT_ERROR(crc32_file(dir.file("none")), "none: cannot be read");
}

}  // namespace
}  // namespace wiola
