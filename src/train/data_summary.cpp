#include "train/data_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace wiola {

std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string si_count(double n) {
  const char* suffix[] = {"", "k", "M", "G", "T", "P"};
  int k = 0;
  while (std::abs(n) >= 1000.0 && k < 5) {
    n /= 1000.0;
    ++k;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g%s", n, suffix[k]);
  return buf;
}

namespace {

std::string file_list(const std::vector<std::string>& files) {
  std::string out;
  const std::size_t shown = std::min<std::size_t>(files.size(), 3);
  for (std::size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + files[i];
  if (files.size() > shown) out += ", … (" + std::to_string(files.size() - shown) + " more)";
  return out;
}

}  // namespace

std::string DataSummary::describe() const {
  std::string out = "  data: training " + grouped(train_tokens) + " tokens (" +
                    grouped(train_windows) + " windows) in " + std::to_string(train_files.size()) +
                    (train_files.size() == 1 ? " file: " : " files: ") + file_list(train_files) + "\n";
  if (val_windows > 0) {
    out += "  data: validation " + grouped(val_tokens) + " tokens (" + grouped(val_windows) +
           " windows) " +
           (val_held_out ? std::string("held out of the training files")
                         : "in " + std::to_string(val_files.size()) +
                               (val_files.size() == 1 ? " file: " : " files: ") +
                               file_list(val_files)) +
           "\n";
  } else {
    out += "  data: no validation data\n";
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "  data: the budget of %s tokens covers %.3g epoch%s of the training data\n",
                grouped(budget_tokens).c_str(), epochs(), std::abs(epochs() - 1.0) < 1e-12 ? "" : "s");
  out += buf;
  return out;
}

}  // namespace wiola
