#include "io/data_sources.hpp"

#include <glob.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/text.hpp"

namespace wiola {

namespace fs = std::filesystem;

namespace {

bool is_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

bool is_manifest(const std::string& s) {
  return (!s.empty() && s[0] == '@') ||
         (s.size() > 9 && s.compare(s.size() - 9, 9, ".manifest") == 0);
}

std::vector<std::string> expand(const std::string& entry, const std::string& where) {
  if (!is_glob(entry)) return {entry};
  glob_t g{};
  const int rc = ::glob(entry.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  require(rc != GLOB_ABORTED, where, "glob '", entry, "': a folder on its path cannot be read");
  require(!out.empty(), where, "glob '", entry, "' matches no file");
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<double> parse_weight(std::string_view s) {
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v) || v <= 0)
    return std::nullopt;
  return v;
}

struct Entry {
  std::string text;  // path or glob, resolved against the manifest's folder
  std::string where; // "m.manifest:3: " or ""
  std::optional<double> weight;
};

void read_manifest(const std::string& manifest, std::vector<Entry>& out) {
  std::ifstream in(manifest);
  require(in.good(), manifest, ": cannot read the manifest");
  const fs::path base = fs::path(manifest).parent_path();
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> parts;
    for (std::string w; words >> w;) parts.push_back(w);
    if (parts.empty()) continue;
    std::string where = manifest;
    where += ':';
    where += std::to_string(no);
    where += ": ";
    require(parts.size() <= 2, where, "expected 'PATH [WEIGHT]', found ", parts.size(), " fields");
    require(!is_manifest(parts[0]), where, "manifests do not nest ('", parts[0], "')");
    Entry e;
    const fs::path p(parts[0]);
    e.text = p.is_absolute() || base.empty() ? parts[0] : (base / p).string();
    e.where = where;
    if (parts.size() == 2) {
      e.weight = parse_weight(parts[1]);
      require(e.weight.has_value(), where, "weight '", parts[1], "' is not a number > 0");
    }
    out.push_back(std::move(e));
  }
  require(!in.bad(), manifest, ": reading the manifest failed after line ", no);
  require(!out.empty(), manifest, ": the manifest lists no files");
}

}  // namespace

std::vector<std::string> DataSources::all_files() const {
  std::vector<std::string> out;
  for (const auto& c : components) out.insert(out.end(), c.files.begin(), c.files.end());
  return out;
}

std::vector<double> parse_weight_list(const std::string& text, const std::string& what) {
  std::vector<double> out;
  for (const std::string& part : split_list(text)) {
    const auto w = parse_weight(part);
    require(w.has_value(), what, ": weight '", part, "' is not a number > 0");
    out.push_back(*w);
  }
  require(!out.empty(), what, ": no weights in '", text, "'");
  return out;
}

DataSources resolve_data_sources(const std::vector<std::string>& entries,
                                 const std::vector<double>& weights) {
  require(!entries.empty(), "dataset: no files given");
  std::vector<Entry> list;
  for (const auto& e : entries) {
    require(!e.empty(), "dataset: an empty file name");
    if (is_manifest(e)) read_manifest(e[0] == '@' ? e.substr(1) : e, list);
    else list.push_back({e, "", std::nullopt});
  }
  const auto with_weight = std::count_if(list.begin(), list.end(),
                                         [](const Entry& e) { return e.weight.has_value(); });
  DataSources out;
  if (!weights.empty()) {
    require(with_weight == 0, list.front().where.empty() ? std::string("dataset: ") : list.front().where,
            "weights are given both in a manifest and as a list; use one");
    require(weights.size() == list.size(), "dataset: ", weights.size(),
            " weights for ", list.size(), " entries (one weight per path, glob or manifest line)");
    for (std::size_t i = 0; i < list.size(); ++i) {
      require(std::isfinite(weights[i]) && weights[i] > 0, "dataset: weight ", weights[i],
              " of '", list[i].text, "' must be > 0");
      list[i].weight = weights[i];
    }
    out.weighted = true;
  } else if (with_weight > 0) {
    for (const auto& e : list)
      require(e.weight.has_value(), e.where, "'", e.text,
              "' has no weight, but other entries do: give every entry a weight or none");
    out.weighted = true;
  }

  std::set<std::string> seen;
  for (const auto& e : list) {
    DataComponent c;
    c.name = e.text;
    c.files = expand(e.text, e.where);
    c.weight = e.weight.value_or(1.0);
    for (const auto& f : c.files) {
      std::error_code ec;
      const fs::path canon = fs::weakly_canonical(f, ec);
      require(seen.insert(ec ? f : canon.string()).second, e.where, "'", f,
              "' is listed twice in the dataset");
    }
    out.components.push_back(std::move(c));
  }
  if (!out.weighted && out.components.size() > 1) {
    // One component: windows are drawn uniformly over every file.
    DataComponent all;
    all.name = "all";
    all.files = out.all_files();
    out.components = {std::move(all)};
  }
  return out;
}

}  // namespace wiola
