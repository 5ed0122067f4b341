#include "core/text.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace wiola {

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
