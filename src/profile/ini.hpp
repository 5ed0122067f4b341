#pragma once
// A flat key/value store read from INI-style text: `[section]` headers,
// `key = value` lines, `#` or `;` comments. Keys are stored as
// "section.key" ("key" before any header). Used for the projection spec
// (docs/profiling.md), where later sources override earlier ones.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wiola::profile {

class KeyValues {
 public:
  // Parses `text`; `origin` names it in error messages. Later keys override earlier.
  void merge_ini(const std::string& text, const std::string& origin);
  // "section.key=value" (from --project-set).
  void merge_assignment(const std::string& assignment);
  void set(const std::string& key, const std::string& value, const std::string& origin);

  bool has(const std::string& key) const { return values_.count(key) > 0; }
  std::optional<std::string> get(const std::string& key) const;
  // Typed getters: the fallback when absent; wiola::Error naming key and origin when malformed.
  std::string text(const std::string& key, const std::string& fallback) const;
  double number(const std::string& key, double fallback) const;
  int integer(const std::string& key, int fallback) const;
  // Comma-separated numbers ("1.5, 2, 3"); empty when absent.
  std::vector<double> numbers(const std::string& key) const;
  // Every key that was never read by a getter (to report typos).
  std::vector<std::string> unused() const;

 private:
  struct Entry {
    std::string value, origin;
  };
  const Entry* entry(const std::string& key) const;
  std::map<std::string, Entry> values_;
  mutable std::map<std::string, bool> used_;
};

}  // namespace wiola::profile
