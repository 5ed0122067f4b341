#include "train/metrics_log.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "core/model_fields.hpp"

namespace fs = std::filesystem;

namespace wiola {

namespace {

using json = nlohmann::json;

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json record(const char* type) { return json{{"type", type}, {"time", unix_seconds()}}; }

// Non-finite numbers are not JSON: null stands for them.
json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The INI text as an object; a key given more than once (train-data) becomes a list.
json ini_object(const std::string& ini) {
  json o = json::object();
  std::istringstream in(ini);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 3);
    if (!o.contains(key)) {
      o[key] = value;
    } else {
      if (!o[key].is_array()) o[key] = json::array({o[key]});
      o[key].push_back(value);
    }
  }
  return o;
}

json model_object(const ModelConfig& c) {
  json m = json::object();
  m["preset"] = c.preset;
  for (const ModelField& f : model_fields()) {
    switch (f.kind()) {
      case FieldKind::Int: m[f.file_key] = f.get_int(c); break;
      case FieldKind::Real: m[f.file_key] = f.get_real(c); break;
      case FieldKind::Choice: m[f.file_key] = f.text(c); break;
    }
  }
  return m;
}

}  // namespace

MetricsLog::MetricsLog(const std::string& path) : path_(path) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  out_.open(path, std::ios::app);
  require(out_.is_open(), "--metrics ", path, ": cannot open it for appending");
}

void MetricsLog::write_line(const std::string& text) {
  if (!enabled()) return;
  out_ << text << '\n';
  out_.flush();
  require(out_.good(), "--metrics ", path_, ": writing failed (disk full?)");
}

void MetricsLog::config(const MetricsRunInfo& i) {
  if (!enabled()) return;
  json r = record("config");
  r["version"] = i.version;
  r["first_step"] = i.first_step;
  r["resumed_from"] = i.resumed_from.empty() ? json(nullptr) : json(i.resumed_from);
  r["total_steps"] = i.total_steps;
  r["tokens_per_step"] = i.tokens_per_step;
  r["budget_tokens"] = i.data.budget_tokens;
  r["model"] = model_object(i.model);
  r["params"] = i.params;
  r["training_flops_per_token"] = i.training_flops_per_token;
  json stages = json::array();
  for (const StageSpec& s : i.stages)
    stages.push_back({{"first_layer", s.first_layer}, {"end_layer", s.end_layer}});
  r["layout"] = {{"pp", i.pp},
                 {"dp", i.dp},
                 {"zero", i.zero},
                 {"schedule", i.schedule},
                 {"micro_batch", i.micro_batch},
                 {"global_batch", i.global_batch},
                 {"microbatches_per_replica", i.microbatches},
                 {"stages", stages},
                 {"device", i.device},
                 {"dtype", i.dtype}};
  r["data"] = {{"train_files", i.data.train_files},
               {"train_tokens", i.data.train_tokens},
               {"train_windows", i.data.train_windows},
               {"val_files", i.data.val_files},
               {"val_tokens", i.data.val_tokens},
               {"val_windows", i.data.val_windows},
               {"val_held_out", i.data.val_held_out},
               {"epochs", number(i.data.epochs())}};
  r["options"] = ini_object(i.options_ini);
  write_line(r.dump());
}

void MetricsLog::step(const MetricsStep& s) {
  if (!enabled()) return;
  json r = record("step");
  r["step"] = s.step;
  r["tokens"] = s.tokens;
  r["loss"] = number(s.loss);
  r["step_loss"] = number(s.step_loss);
  r["window_steps"] = s.window_steps;
  r["lr"] = s.lr;
  r["grad_norm"] = number(s.grad_norm);
  r["tokens_per_s"] = number(s.tokens_per_s);
  r["flops_per_s"] = number(s.flops_per_s);
  r["elapsed_s"] = s.elapsed_s;
  if (s.skipped) r["skipped"] = true;
  write_line(r.dump());
}

void MetricsLog::validation(std::int64_t step, std::int64_t tokens, double val_loss) {
  if (!enabled()) return;
  json r = record("validation");
  r["step"] = step;
  r["tokens"] = tokens;
  r["val_loss"] = number(val_loss);
  r["val_perplexity"] = number(std::exp(val_loss));
  write_line(r.dump());
}

void MetricsLog::checkpoint(std::int64_t step, std::int64_t tokens, const std::string& dir,
                            double seconds, std::uintmax_t bytes) {
  if (!enabled()) return;
  json r = record("checkpoint");
  r["step"] = step;
  r["tokens"] = tokens;
  r["path"] = dir;
  r["seconds"] = seconds;
  r["bytes"] = bytes;
  write_line(r.dump());
}

std::uintmax_t directory_bytes(const std::string& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  return total;
}

}  // namespace wiola
