#pragma once
// What data a run loaded, for the start-up report and the metrics file's
// configuration record: files, tokens, and how many passes over the training
// data the token budget makes.
#include <cstdint>
#include <string>
#include <vector>

namespace wiola {

struct DataSummary {
  std::vector<std::string> train_files, val_files;
  std::int64_t train_tokens = 0, train_windows = 0;  // in the training view
  std::int64_t val_tokens = 0, val_windows = 0;      // 0 without validation data
  bool val_held_out = false;                         // --val-fraction: held out of the training files
  std::int64_t budget_tokens = 0;                    // steps × global batch × T
  // Passes over the training tokens the budget makes.
  double epochs() const {
    return train_tokens > 0 ? double(budget_tokens) / double(train_tokens) : 0.0;
  }
  // Lines of the start-up report, each starting "  data ...".
  std::string describe() const;
};

// 897763 -> "897,763"; the figures a person compares by eye.
std::string grouped(std::int64_t n);
// 1536000 -> "1.536M", 20480 -> "20.48k", 512 -> "512": counts in a log line.
std::string si_count(double n);

}  // namespace wiola
