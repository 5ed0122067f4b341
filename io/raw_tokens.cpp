#include "io/raw_tokens.hpp"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/error.hpp"

namespace wiola {

namespace {

std::uint64_t little(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::int64_t file_size(const std::string& path) {
  std::error_code ec;
  require(std::filesystem::is_regular_file(path, ec), path, ": no such file");
  return static_cast<std::int64_t>(std::filesystem::file_size(path, ec));
}

std::vector<unsigned char> read_prefix(const std::string& path, std::size_t n) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), path, ": cannot read the file");
  std::vector<unsigned char> buf(n);
  in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(n));
  buf.resize(static_cast<std::size_t>(in.gcount()));
  return buf;
}

void check_size(const RawTokenFile& f, std::int64_t size) {
  const std::int64_t want = f.data_offset + f.count * f.elem_size;
  require(size >= want, f.path, ": truncated: the ", f.description, " header says ", f.count,
          " tokens (", want, " bytes) but the file has ", size, " bytes");
  require(size == want, f.path, ": ", size - want, " bytes after the ", f.count,
          " tokens the ", f.description, " header announces (damaged file?)");
}

// ---- the Python literal of a .npy header: {'descr': '<u2', 'fortran_order': False, 'shape': (N,), }
struct PyValue {
  enum Kind { Str, Bool, Tuple, Int } kind = Int;
  std::string str;
  bool flag = false;
  std::vector<std::int64_t> items;
  std::int64_t number = 0;
};

class PyParser {
 public:
  PyParser(std::string_view s, const std::string& path) : s_(s), path_(path) {}

  std::map<std::string, PyValue> dict() {
    std::map<std::string, PyValue> out;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      const std::string key = string();
      expect(':');
      out[key] = value();
      skip();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return out;
    }
    ++i_;
    return out;
  }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  [[noreturn]] void error(const std::string& what) const {
    fail(path_, ": .npy header: ", what, " at character ", i_, " of '", s_, "'");
  }
  void expect(char c) {
    skip();
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string() {
    skip();
    const char q = peek();
    if (q != '\'' && q != '"') error("expected a quoted string");
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) out += s_[i_++];
    if (i_ >= s_.size()) error("unterminated string");
    ++i_;
    return out;
  }
  std::int64_t integer() {
    skip();
    const std::size_t start = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (i_ == start) error("expected a non-negative integer");
    if (i_ - start > 18) error("integer too large");
    const std::int64_t v = std::stoll(std::string(s_.substr(start, i_ - start)));
    if (peek() == 'L') ++i_;  // Python 2 long
    return v;
  }
  PyValue value() {
    skip();
    PyValue v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Str;
      v.str = string();
    } else if (s_.substr(i_, 4) == "True") {
      v.kind = PyValue::Bool;
      v.flag = true;
      i_ += 4;
    } else if (s_.substr(i_, 5) == "False") {
      v.kind = PyValue::Bool;
      i_ += 5;
    } else if (c == '(') {
      v.kind = PyValue::Tuple;
      ++i_;
      while (true) {
        skip();
        if (peek() == ')') break;
        v.items.push_back(integer());
        skip();
        if (peek() == ',') ++i_;
        else if (peek() != ')') error("expected ',' or ')' in the shape");
      }
      ++i_;
    } else {
      v.kind = PyValue::Int;
      v.number = integer();
    }
    return v;
  }

  std::string_view s_;
  const std::string& path_;
  std::size_t i_ = 0;
};

RawTokenFile open_npy(const std::string& path, std::int64_t size) {
  const auto head = read_prefix(path, 12);
  RawTokenFile f;
  f.path = path;
  f.kind = RawKind::Npy;
  require(head.size() >= 10 && std::memcmp(head.data(), "\x93NUMPY", 6) == 0, path,
          ": not a .npy file (no \\x93NUMPY magic)");
  const int major = head[6];
  require(major >= 1 && major <= 3, path, ": .npy format version ", major, ".", int(head[7]),
          " is not supported (1.0, 2.0, 3.0)");
  std::int64_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<std::int64_t>(little(head.data() + 8, 2));
    start = 10;
  } else {
    require(head.size() >= 12, path, ": truncated .npy preamble");
    header_len = static_cast<std::int64_t>(little(head.data() + 8, 4));
    start = 12;
  }
  require(start + header_len <= size && header_len < (1 << 24), path,
          ": truncated: the .npy header claims ", header_len, " bytes, the file has ", size);
  const auto all = read_prefix(path, static_cast<std::size_t>(start + header_len));
  const std::string text(all.begin() + start, all.end());
  const auto dict = PyParser(text, path).dict();
  for (const char* key : {"descr", "fortran_order", "shape"})
    require(dict.count(key), path, ": .npy header lacks '", key, "'");
  const PyValue& descr = dict.at("descr");
  const PyValue& shape = dict.at("shape");
  require(descr.kind == PyValue::Str, path, ": .npy 'descr' is not a simple dtype string "
          "(structured arrays are not token arrays)");
  require(shape.kind == PyValue::Tuple, path, ": .npy 'shape' is not a tuple");
  const std::string& d = descr.str;
  require(d.size() >= 3, path, ": .npy dtype '", d, "' is not understood");
  const char order = d[0], kind = d[1];
  const std::string width = d.substr(2);
  require(kind == 'u' || kind == 'i', path, ": .npy dtype '", d,
          "' is not an integer type (token ids must be integers: u1/u2/u4/u8/i1/i2/i4/i8)");
  require(width == "1" || width == "2" || width == "4" || width == "8", path, ": .npy dtype '", d,
          "' has an unsupported width");
  require(order == '<' || order == '>' || order == '|' || order == '=', path, ": .npy dtype '", d,
          "' has an unknown byte order");
  f.elem_size = width[0] - '0';
  f.is_signed = kind == 'i';
  f.big_endian = order == '>' && f.elem_size > 1;
  require(shape.items.size() == 1, path, ": .npy array has ", shape.items.size(),
          " dimensions; token arrays must be 1-D (flatten it first)");
  f.count = shape.items[0];
  f.data_offset = start + header_len;
  f.description = "NumPy .npy (dtype ";
  f.description += d;
  f.description += ")";
  check_size(f, size);
  return f;
}

RawTokenFile open_bin(const std::string& path, std::int64_t size) {
  RawTokenFile f;
  f.path = path;
  f.kind = RawKind::Bin;
  require(size >= kBinHeaderBytes, path, ": truncated: ", size,
          " bytes, shorter than the 1024-byte .bin header");
  const auto head = read_prefix(path, static_cast<std::size_t>(kBinHeaderBytes));
  const auto word = [&](int i) {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(little(head.data() + 4 * i, 4)));
  };
  require(word(0) == kBinMagic, path, ": .bin header magic is ", word(0), ", expected ", kBinMagic);
  const std::int32_t version = word(1);
  require(version == 1 || version == 2, path, ": .bin header version ", version,
          " is not supported (1: uint16 ids, 2: uint32 ids)");
  require(word(2) >= 0, path, ": .bin header token count ", word(2), " is negative");
  f.elem_size = version == 1 ? 2 : 4;
  f.count = word(2);
  f.data_offset = kBinHeaderBytes;
  f.description = version == 1 ? "GPT-2-style .bin, version 1 (uint16)"
                                : "GPT-2-style .bin, version 2 (uint32)";
  check_size(f, size);
  return f;
}

RawTokenFile open_raw(const std::string& path, std::int64_t size, const std::string& dtype) {
  RawTokenFile f;
  f.path = path;
  f.kind = RawKind::Raw;
  if (dtype == "u16" || dtype == "uint16") f.elem_size = 2;
  else if (dtype == "u32" || dtype == "uint32") f.elem_size = 4;
  else fail(path, ": raw token files need --dtype u16 or u32 (got '", dtype, "')");
  require(size % f.elem_size == 0, path, ": ", size, " bytes is not a multiple of ",
          f.elem_size, " (truncated, or not ", dtype, "?)");
  f.count = size / f.elem_size;
  f.description = f.elem_size == 2 ? "raw uint16" : "raw uint32";
  return f;
}

}  // namespace

RawKind parse_raw_kind(const std::string& s) {
  if (s == "auto") return RawKind::Auto;
  if (s == "bin") return RawKind::Bin;
  if (s == "raw") return RawKind::Raw;
  if (s == "npy") return RawKind::Npy;
  fail("--format: '", s, "' is not auto, bin, npy or raw");
}

RawTokenFile open_raw_tokens(const std::string& path, RawKind kind, const std::string& raw_dtype) {
  const std::int64_t size = file_size(path);
  if (kind == RawKind::Auto) {
    const auto head = read_prefix(path, 8);
    if (head.size() >= 6 && std::memcmp(head.data(), "\x93NUMPY", 6) == 0) kind = RawKind::Npy;
    else if (head.size() >= 4 && static_cast<std::int32_t>(little(head.data(), 4)) == kBinMagic)
      kind = RawKind::Bin;
    else if (!raw_dtype.empty()) kind = RawKind::Raw;
    else
      fail(path, ": cannot tell the format (no .npy magic, no .bin header); for bare ids give "
           "--format raw --dtype u16|u32");
  }
  switch (kind) {
    case RawKind::Npy: return open_npy(path, size);
    case RawKind::Bin: return open_bin(path, size);
    default: return open_raw(path, size, raw_dtype.empty() ? std::string("?") : raw_dtype);
  }
}

RawTokenReader::RawTokenReader(const RawTokenFile& f) : f_(f), in_(f.path, std::ios::binary) {
  require(in_.good(), f.path, ": cannot read the file");
  in_.seekg(f.data_offset);
}

std::int64_t RawTokenReader::read(std::int64_t n, std::int64_t* out) {
  n = std::min(n, f_.count - pos_);
  if (n <= 0) return 0;
  const std::size_t bytes = static_cast<std::size_t>(n) * static_cast<std::size_t>(f_.elem_size);
  buf_.resize(bytes);
  in_.read(reinterpret_cast<char*>(buf_.data()), static_cast<std::streamsize>(bytes));
  require(static_cast<std::size_t>(in_.gcount()) == bytes, f_.path, ": reading token ", pos_,
          " failed (file shrank or unreadable)");
  const int w = f_.elem_size;
  for (std::int64_t i = 0; i < n; ++i) {
    unsigned char* p = buf_.data() + i * w;
    std::uint64_t v = 0;
    if (f_.big_endian)
      for (int k = 0; k < w; ++k) v = (v << 8) | p[k];
    else
      v = little(p, w);
    if (f_.is_signed && w < 8 && (v >> (8 * w - 1)) & 1) v |= ~std::uint64_t{0} << (8 * w);  // sign-extend
    out[i] = static_cast<std::int64_t>(v);
  }
  pos_ += n;
  return n;
}

}  // namespace wiola
