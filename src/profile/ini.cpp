#include "profile/ini.hpp"

#include <cmath>
#include <sstream>

#include "core/error.hpp"

namespace wiola::profile {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

double parse_double(const std::string& v, const std::string& key, const std::string& origin) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used > 0 && trim(v.substr(used)).empty() && std::isfinite(x), origin, ": ", key,
          " = '", v, "' is not a number");
  return x;
}

}  // namespace

void KeyValues::merge_ini(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  std::string line, section;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const auto hash = line.find_first_of("#;");
    if (hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = origin + ":" + std::to_string(n);
    if (line.front() == '[') {
      require(line.back() == ']' && line.size() > 2, where, ": malformed section header '", line,
              "'");
      section = trim(line.substr(1, line.size() - 2));
      continue;
    }
    const auto eq = line.find('=');
    require(eq != std::string::npos && eq > 0, where, ": expected 'key = value', got '", line,
            "'");
    const std::string key = trim(line.substr(0, eq));
    set(section.empty() ? key : section + "." + key, trim(line.substr(eq + 1)), where);
  }
}

void KeyValues::merge_assignment(const std::string& assignment) {
  const auto eq = assignment.find('=');
  require(eq != std::string::npos && eq > 0, "--project-set: expected section.key=value, got '",
          assignment, "'");
  set(trim(assignment.substr(0, eq)), trim(assignment.substr(eq + 1)), "--project-set");
}

void KeyValues::set(const std::string& key, const std::string& value, const std::string& origin) {
  values_[key] = Entry{value, origin};
}

const KeyValues::Entry* KeyValues::entry(const std::string& key) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return nullptr;
  used_[key] = true;
  return &it->second;
}

std::optional<std::string> KeyValues::get(const std::string& key) const {
  if (const Entry* e = entry(key)) return e->value;
  return std::nullopt;
}

std::string KeyValues::text(const std::string& key, const std::string& fallback) const {
  const Entry* e = entry(key);
  return e ? e->value : fallback;
}

double KeyValues::number(const std::string& key, double fallback) const {
  const Entry* e = entry(key);
  return e ? parse_double(e->value, key, e->origin) : fallback;
}

int KeyValues::integer(const std::string& key, int fallback) const {
  const Entry* e = entry(key);
  if (!e) return fallback;
  const double x = parse_double(e->value, key, e->origin);
  require(std::floor(x) == x && std::fabs(x) < 2e9, e->origin, ": ", key, " = '", e->value,
          "' is not an integer");
  return static_cast<int>(x);
}

std::vector<double> KeyValues::numbers(const std::string& key) const {
  std::vector<double> out;
  const Entry* e = entry(key);
  if (!e) return out;
  std::stringstream ss(e->value);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_double(trim(item), key, e->origin));
  return out;
}

std::vector<std::string> KeyValues::unused() const {
  std::vector<std::string> out;
  for (const auto& [k, e] : values_)
    if (!used_.count(k)) out.push_back(k + " (" + e.origin + ")");
  return out;
}

}  // namespace wiola::profile
