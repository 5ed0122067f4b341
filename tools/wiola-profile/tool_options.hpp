#pragma once
// wiola-profile's own flags, read with Boost.Program_options from the command
// line only. Everything else on it is wiola-train's and goes, in order, to
// parse_train_options (the same flags and --config file), so a profile runs
// exactly what the training job would.
#include <iosfwd>
#include <string>
#include <vector>

#include "wiola-profile/sweep.hpp"

namespace wiola::profile {

struct ToolOptions {
  bool help = false;
  bool version = false;
  int profile_steps = 10;
  int warmup_steps = 2;
  std::string peak = "measured";  // --peak-tflops
  int gemm_size = 1024;
  double gemm_seconds = 0.5;
  std::string out_dir;  // --out
  bool trace = true;
  bool verbose = false;  // show the trainer's log
  bool sweep = false;
  SweepSpec sweep_spec;
  std::string project;  // --project FILE
  std::vector<std::string> project_set;
  std::vector<std::string> train_args;  // argv[0] and the rest, for parse_train_options
};

// Throws wiola::Error for a malformed value of one of these flags (the
// others are left to parse_train_options).
ToolOptions parse_tool_options(int argc, const char* const* argv);

// The help text of the profiler's own flags, grouped, with their defaults.
void print_tool_help(std::ostream& out);

}  // namespace wiola::profile
