#pragma once
// Token ids stored outside HDF5, for `wiola-data import`:
//   bin  the 256 x int32 little-endian header of GPT-2-style shards (llm.c):
//        header[0] = 20240520 (magic), header[1] = version (1: uint16 ids,
//        2: uint32 ids), header[2] = token count; the ids follow at byte 1024
//   npy  a NumPy .npy array (format 1.0, 2.0, 3.0): 1-D, integer dtype
//        (|u1 <u2 <u4 <u8 |i1 <i2 <i4 <i8, or big-endian '>'), any order flag
//   raw  bare little-endian uint16 or uint32 ids (--dtype u16|u32)
// Every header is checked against the file size, so a truncated file is an
// error naming it, never a short dataset.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace wiola {

enum class RawKind : std::uint8_t { Auto, Bin, Raw, Npy };
RawKind parse_raw_kind(const std::string& s);  // auto | bin | raw | npy

inline constexpr std::int32_t kBinMagic = 20240520;
inline constexpr std::int64_t kBinHeaderBytes = 256 * 4;

struct RawTokenFile {
  std::string path;
  std::string description;  // e.g. "GPT-2-style .bin, version 1 (uint16)"
  RawKind kind = RawKind::Raw;
  std::int64_t data_offset = 0;
  int elem_size = 2;
  bool is_signed = false;
  bool big_endian = false;
  std::int64_t count = 0;
};

// Identifies (kind Auto: by the .npy magic or the .bin magic, else raw when
// raw_dtype is given) and checks the file.
RawTokenFile open_raw_tokens(const std::string& path, RawKind kind, const std::string& raw_dtype);

// Streams the ids of a raw token file as int64 values.
class RawTokenReader {
 public:
  explicit RawTokenReader(const RawTokenFile& f);
  // Reads up to n ids into out; returns how many (0 at the end).
  std::int64_t read(std::int64_t n, std::int64_t* out);
  std::int64_t position() const { return pos_; }

 private:
  RawTokenFile f_;
  std::ifstream in_;
  std::int64_t pos_ = 0;
  std::vector<unsigned char> buf_;
};

}  // namespace wiola
