#include "io/sharded_encode.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <optional>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"
#include "io/checkpoint_manifest.hpp"

namespace wiola {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<int> assign_units(const std::vector<std::int64_t>& sizes, int tasks) {
  require(tasks >= 1, "--tasks must be at least 1");
  std::vector<std::size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
  std::vector<std::int64_t> load(static_cast<std::size_t>(tasks), 0);
  std::vector<int> owner(sizes.size(), 0);
  for (const std::size_t u : order) {
    const auto least = std::min_element(load.begin(), load.end());  // the first of equals
    owner[u] = static_cast<int>(least - load.begin());
    *least += sizes[u];
  }
  return owner;
}

std::string unit_output_name(std::size_t unit) {
  char name[32];
  std::snprintf(name, sizeof name, "part-%05zu.h5", unit);
  return name;
}

namespace {

const char* format_name(TextFormat f) { return f == TextFormat::JsonLines ? "jsonl" : "text"; }
const char* split_name(TextSplit s) {
  switch (s) {
    case TextSplit::File: return "file";
    case TextSplit::Line: return "line";
    case TextSplit::Paragraph: return "paragraph";
    case TextSplit::Separator: return "separator";
  }
  return "?";
}

// What makes a unit's outputs what they are, besides its input.
json encode_settings(const TextInputOptions& in, const Tokenizer& tok, const EncodeOptions& e) {
  json s;
  s["tokenizer"] = tok.name();
  s["tokenizer_hash"] = tok.hash();
  s["format"] = format_name(in.format);
  s["field"] = in.field;
  s["split"] = split_name(in.split);
  s["separator"] = in.separator;
  s["shard_tokens"] = e.shard_tokens;
  s["skip_invalid"] = e.skip_invalid;
  return s;
}

std::string done_path(const std::string& dir, std::size_t unit) {
  return (fs::path(dir) / (fs::path(unit_output_name(unit)).stem().string() + ".done")).string();
}

// A unit's record when it is done with these inputs and settings; nullopt
// when it is not done. A record made from another input or with other
// settings is an error: the folder holds another dataset.
std::optional<json> read_done(const std::string& dir, std::size_t unit, const std::string& input,
                              std::int64_t input_bytes, const json& settings) {
  const std::string path = done_path(dir, unit);
  const auto text = try_read_text_file(path);
  if (!text) return std::nullopt;
  json j;
  try {
    j = json::parse(*text);
  } catch (const json::exception&) {
    fail(path, ": not valid JSON; remove it and run again to redo ", input);
  }
  const bool same = j.is_object() && j.value("input", "") == input &&
                    j.value("input_bytes", std::int64_t{-1}) == input_bytes &&
                    j.contains("settings") && j["settings"] == settings &&
                    j.contains("outputs") && j["outputs"].is_array();
  require(same, path, ": this folder's part ", unit, " was encoded from ",
          j.is_object() ? j.value("input", std::string("?")) : std::string("?"),
          " or with other settings than now (", input, ", ", input_bytes,
          " bytes, ", settings.dump(), "); use another --out-dir or remove the folder");
  for (const auto& o : j["outputs"]) {
    const std::string f = (fs::path(dir) / o.get<std::string>()).string();
    std::error_code ec;
    if (!fs::is_regular_file(f, ec)) return std::nullopt;  // an output lost since: redo the unit
  }
  return j;
}

std::string manifest_text(const std::vector<json>& done, const std::string& out_dir,
                          const std::string& manifest, const Tokenizer& tok) {
  std::int64_t docs = 0, tokens = 0;
  for (const auto& d : done) {
    docs += d["documents"].get<std::int64_t>();
    tokens += d["tokens"].get<std::int64_t>();
  }
  std::string text = "# wiola-data encode: " + std::to_string(done.size()) + " input files, " +
                     std::to_string(docs) + " documents, " + std::to_string(tokens) +
                     " tokens, tokenizer " + tok.name() + " " + tok.hash() + "\n";
  const fs::path base = fs::absolute(manifest).parent_path();
  for (const auto& d : done) {
    text += "# " + d["input"].get<std::string>() + "\n";
    for (const auto& o : d["outputs"]) {
      const fs::path f = fs::absolute(fs::path(out_dir) / o.get<std::string>());
      text += f.lexically_relative(base).string() + "\n";
    }
  }
  return text;
}

}  // namespace

ShardedEncodeReport encode_sharded(const std::vector<std::string>& inputs,
                                   const TextInputOptions& input_options,
                                   const Tokenizer& tokenizer,
                                   const ShardedEncodeOptions& options) {
  require(options.tasks >= 1, "--tasks must be at least 1 (given ", options.tasks, ")");
  require(options.task >= 0 && options.task < options.tasks, "--task ", options.task,
          " is outside [0, --tasks ", options.tasks, ")");
  require(!inputs.empty(), "no input files given");
  require(!options.out_dir.empty(), "--out-dir: no folder given");
  std::vector<std::int64_t> sizes;
  std::set<std::string> seen;
  for (const auto& f : inputs) {
    std::error_code ec;
    require(fs::is_regular_file(f, ec), f, ": no such file");
    require(seen.insert(fs::weakly_canonical(f).string()).second, f,
            ": listed twice among the inputs");
    sizes.push_back(static_cast<std::int64_t>(fs::file_size(f)));
  }
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  require(fs::is_directory(options.out_dir, ec), options.out_dir,
          ": cannot create the output folder", ec ? " (" + ec.message() + ")" : std::string());
  const json settings = encode_settings(input_options, tokenizer, options.encode);
  const std::vector<int> owner = assign_units(sizes, options.tasks);

  ShardedEncodeReport report;
  for (std::size_t u = 0; u < inputs.size(); ++u) {
    if (owner[u] != options.task) continue;
    report.units.push_back(u);
    if (read_done(options.out_dir, u, inputs[u], sizes[u], settings)) {
      report.skipped_done.push_back(u);
      continue;
    }
    DocumentReader reader({inputs[u]}, input_options);
    const std::string out = (fs::path(options.out_dir) / unit_output_name(u)).string();
    const EncodeReport r = encode_text(reader, tokenizer, out, options.encode);
    json done;
    done["input"] = inputs[u];
    done["input_bytes"] = sizes[u];
    done["settings"] = settings;
    done["outputs"] = json::array();
    for (const auto& o : r.outputs) done["outputs"].push_back(fs::path(o).filename().string());
    done["documents"] = r.documents;
    done["tokens"] = r.tokens;
    done["skipped"] = r.total_skipped();
    write_text_file_atomic(done_path(options.out_dir, u), done.dump(1) + "\n");

    auto& sum = report.encoded;
    sum.documents += r.documents;
    sum.tokens += r.tokens;
    sum.bytes += r.bytes;
    sum.seconds += r.seconds;
    for (std::size_t k = 0; k < sum.skipped.size(); ++k) {
      if (sum.skipped[k] == 0) sum.first_problem[k] = r.first_problem[k];
      sum.skipped[k] += r.skipped[k];
    }
    sum.outputs.insert(sum.outputs.end(), r.outputs.begin(), r.outputs.end());
  }

  // The manifest, once every unit (this task's and the others') is done.
  std::vector<json> done;
  for (std::size_t u = 0; u < inputs.size(); ++u) {
    auto d = read_done(options.out_dir, u, inputs[u], sizes[u], settings);
    if (d) done.push_back(std::move(*d));
    else report.missing.push_back(u);
  }
  if (report.missing.empty()) {
    const std::string manifest = options.manifest.empty()
                                     ? (fs::path(options.out_dir) / "dataset.manifest").string()
                                     : options.manifest;
    // Several tasks may finish together: each writes its own file, then
    // renames it into place (the contents are the same).
    const std::string mine = manifest + ".task" + std::to_string(options.task);
    write_text_file_atomic(mine, manifest_text(done, options.out_dir, manifest, tokenizer));
    require(std::rename(mine.c_str(), manifest.c_str()) == 0, manifest, ": cannot rename ",
            mine, " into place");
    report.manifest = manifest;
  }
  return report;
}

}  // namespace wiola
