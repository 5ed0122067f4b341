#pragma once
// --metrics FILE: the run as JSON Lines (one JSON object per line), written by
// world rank 0, appended and flushed record by record, so a resumed run
// continues the same file and a crash loses nothing already logged.
// tools/wiola-plot draws it. Records (every one has "type", "time": Unix
// seconds, and "step" where it belongs to one):
//   config      the run's configuration: version, options (the INI a checkpoint
//               records), model fields, exact parameters, FLOPs per token,
//               layout, data, budget; `first_step` > 1 and `resumed_from`
//               when the run resumed
//   step        every logged step: tokens seen, loss (mean over the steps
//               since the previous record, as the log line), step_loss, lr,
//               grad_norm, tokens_per_s, flops_per_s (model FLOPs), elapsed_s
//   validation  val_loss and val_perplexity, with tokens seen
//   checkpoint  path, seconds spent writing, bytes on disk, tokens seen
// Records after a resume repeat the steps after the checkpoint's: a reader
// keeps, for each step, the latest record (tools/wiola-plot does).
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/model_config.hpp"
#include "core/param_layout.hpp"
#include "train/data_summary.hpp"

namespace wiola {

struct MetricsRunInfo {
  std::string version, options_ini, device;
  ModelConfig model;
  std::int64_t params = 0;
  double training_flops_per_token = 0;
  int pp = 1, dp = 1, zero = 0, micro_batch = 0, global_batch = 0, microbatches = 0;
  std::string schedule, dtype;
  std::vector<StageSpec> stages;
  DataSummary data;
  std::int64_t total_steps = 0, tokens_per_step = 0, first_step = 1;
  std::string resumed_from;  // "" for a fresh run
};

struct MetricsStep {
  std::int64_t step = 0, tokens = 0;
  double loss = 0, step_loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, flops_per_s = 0;
  double elapsed_s = 0;
  int window_steps = 1;
  bool skipped = false;
};

class MetricsLog {
 public:
  MetricsLog() = default;  // writes nothing
  // Opens `path` for appending, creating missing parent folders; throws
  // wiola::Error naming the path.
  explicit MetricsLog(const std::string& path);
  bool enabled() const { return out_.is_open(); }
  const std::string& path() const { return path_; }

  void config(const MetricsRunInfo& info);
  void step(const MetricsStep& s);
  void validation(std::int64_t step, std::int64_t tokens, double val_loss);
  void checkpoint(std::int64_t step, std::int64_t tokens, const std::string& dir, double seconds,
                  std::uintmax_t bytes);

 private:
  void write_line(const std::string& json_text);
  std::string path_;
  std::ofstream out_;
};

// Bytes of the regular files under `dir` (a checkpoint directory); 0 when unreadable.
std::uintmax_t directory_bytes(const std::string& dir);

}  // namespace wiola
