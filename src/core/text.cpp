#include "core/text.hpp"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace wiola {

std::string shortest_real(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  // "3e-04" -> "3e-4", "1e+20" -> "1e20": the exponent as a person writes it.
  const std::size_t e = s.find('e');
  if (e != std::string::npos) {
    std::string mant = s.substr(0, e), exp = s.substr(e + 1);
    const bool neg = !exp.empty() && exp[0] == '-';
    if (!exp.empty() && (exp[0] == '-' || exp[0] == '+')) exp.erase(0, 1);
    while (exp.size() > 1 && exp[0] == '0') exp.erase(0, 1);
    s = mant + "e" + (neg ? "-" : "") + exp;
  }
  return s;
}

namespace {

// num_put that writes doubles through shortest_real (other types as usual).
class ShortestRealPut : public std::num_put<char> {
 protected:
  iter_type do_put(iter_type out, std::ios_base& str, char fill, double v) const override {
    (void)str;
    (void)fill;
    for (char c : shortest_real(v)) *out++ = c;
    return out;
  }
  iter_type do_put(iter_type out, std::ios_base& str, char fill, long double v) const override {
    return do_put(out, str, fill, static_cast<double>(v));
  }
};

}  // namespace

std::locale shortest_real_locale(const std::locale& base) {
  return std::locale(base, new ShortestRealPut);
}

namespace {

// The file's text, or why it cannot be read.
std::optional<std::string> read_whole(const std::string& path, std::string* why) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (why) *why = errno ? std::strerror(errno) : "cannot open it";
    return std::nullopt;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    if (why) *why = "it is a directory";
    return std::nullopt;
  }
  std::ostringstream os;
  os << in.rdbuf();
  if (in.bad()) {
    if (why) *why = "read error";
    return std::nullopt;
  }
  return os.str();
}

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  while (true) {
    const auto comma = text.find(',');
    out.emplace_back(trim(text.substr(0, comma)));
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}

std::string duration_text(double seconds) {
  const long long s = static_cast<long long>(seconds + 0.5);
  char buf[48];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

std::string read_text_file(const std::string& path, std::string_view what) {
  std::string why;
  std::optional<std::string> text = read_whole(path, &why);
  if (!text) fail(path, ": cannot read ", what, " (", why, ")");
  return std::move(*text);
}

std::optional<std::string> try_read_text_file(const std::string& path) {
  return read_whole(path, nullptr);
}

namespace {

// Length of the well-formed UTF-8 sequence of 2 to 4 bytes at s[i], or 0.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  std::size_t n = 0;
  unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    if (c == 0xC2) lo = 0xA0;  // U+0080..U+009F are control characters
  }
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string printable(std::string_view bytes) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (const std::size_t n = c >= 0x80 ? utf8_sequence(bytes, i) : 0; n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    }
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 0xF];
    ++i;
  }
  return out;
}

std::string printable_lines(std::string_view text) {
  std::string out;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find('\n', start);
    out += printable(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return out;
    out += '\n';
    start = end + 1;
  }
}

}  // namespace wiola
