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

}  // namespace wiola
