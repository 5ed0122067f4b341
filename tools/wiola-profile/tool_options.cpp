#include "wiola-profile/tool_options.hpp"

#include <ostream>
#include <sstream>

#include "core/error.hpp"
#include "profile/peak.hpp"

namespace wiola::profile {

namespace {

int to_int(const std::string& flag, const std::string& v) {
  std::size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used == v.size() && x >= -2147483647LL && x <= 2147483647LL, flag, ": '", v,
          "' is not an integer");
  return int(x);
}

double to_double(const std::string& flag, const std::string& v) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used == v.size(), flag, ": '", v, "' is not a number");
  return x;
}

std::vector<int> int_list(const std::string& flag, const std::string& v) {
  std::vector<int> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(to_int(flag, item));
  require(!out.empty(), flag, ": empty list");
  return out;
}

std::vector<std::string> word_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

ToolOptions parse_tool_options(int argc, const char* const* argv) {
  ToolOptions t;
  t.train_args.push_back(argc > 0 ? argv[0] : "wiola-profile");
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool inline_value = false;
    if (arg.rfind("--", 0) == 0) {
      const auto eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg.resize(eq);
        inline_value = true;
      }
    }
    // Flags without a value.
    if (arg == "--help" || arg == "-h") {
      t.help = true;
      continue;
    }
    if (arg == "--sweep" || arg == "--no-trace" || arg == "--verbose") {
      require(!inline_value, arg, " takes no value");
      if (arg == "--sweep") t.sweep = true;
      if (arg == "--no-trace") t.trace = false;
      if (arg == "--verbose") t.verbose = true;
      continue;
    }
    static const char* const with_value[] = {
        "--profile-steps", "--warmup-steps", "--peak-tflops",         "--gemm-size",
        "--gemm-seconds",  "--out",          "--sweep-pp",            "--sweep-micro-batch",
        "--sweep-microbatches", "--sweep-zero", "--sweep-schedule",   "--project",
        "--project-set"};
    bool mine = false;
    for (const char* f : with_value) mine = mine || arg == f;
    if (!mine) {
      t.train_args.push_back(argv[i]);
      continue;
    }
    if (!inline_value) {
      require(i + 1 < argc, arg, " needs a value");
      value = argv[++i];
    }
    if (arg == "--profile-steps") t.profile_steps = to_int(arg, value);
    else if (arg == "--warmup-steps") t.warmup_steps = to_int(arg, value);
    else if (arg == "--peak-tflops") t.peak = value;
    else if (arg == "--gemm-size") t.gemm_size = to_int(arg, value);
    else if (arg == "--gemm-seconds") t.gemm_seconds = to_double(arg, value);
    else if (arg == "--out") t.out_dir = value;
    else if (arg == "--sweep-pp") t.sweep_spec.pp = int_list(arg, value);
    else if (arg == "--sweep-micro-batch") t.sweep_spec.micro_batch = int_list(arg, value);
    else if (arg == "--sweep-microbatches") t.sweep_spec.microbatches = int_list(arg, value);
    else if (arg == "--sweep-zero") t.sweep_spec.zero = int_list(arg, value);
    else if (arg == "--sweep-schedule") t.sweep_spec.schedule = word_list(value);
    else if (arg == "--project") t.project = value;
    else if (arg == "--project-set") t.project_set.push_back(value);
  }
  require(t.profile_steps >= 1, "--profile-steps must be at least 1, got ", t.profile_steps);
  require(t.warmup_steps >= 1, "--warmup-steps must be at least 1 (ranks are aligned after it), got ",
          t.warmup_steps);
  parse_peak_spec(t.peak);  // a bad value is refused before any work
  require(t.gemm_size >= 16, "--gemm-size must be at least 16, got ", t.gemm_size);
  require(t.gemm_seconds > 0, "--gemm-seconds must be positive");
  for (int z : t.sweep_spec.zero) require(z >= 0 && z <= 2, "--sweep-zero: ", z, " is not 0, 1 or 2");
  for (int p : t.sweep_spec.pp) require(p >= 1, "--sweep-pp: ", p, " is not positive");
  for (int b : t.sweep_spec.micro_batch) require(b >= 1, "--sweep-micro-batch: ", b, " is not positive");
  for (int m : t.sweep_spec.microbatches) require(m >= 1, "--sweep-microbatches: ", m, " is not positive");
  for (const auto& s : t.sweep_spec.schedule)
    require(s == "1f1b" || s == "gpipe", "--sweep-schedule: '", s, "' is not 1f1b or gpipe");
  const bool sweep_lists = !t.sweep_spec.pp.empty() || !t.sweep_spec.micro_batch.empty() ||
                           !t.sweep_spec.microbatches.empty() || !t.sweep_spec.zero.empty() ||
                           !t.sweep_spec.schedule.empty();
  require(!sweep_lists || t.sweep, "--sweep-* lists need --sweep");
  require(t.project.empty() || !t.sweep, "--project and --sweep do not go together");
  require(t.project_set.empty() || !t.project.empty(), "--project-set needs --project");
  return t;
}

void print_tool_help(std::ostream& out) {
  out << "Usage: mpirun -np N wiola-profile [profile options] [wiola-train options]\n"
         "       wiola-profile --project SPEC.ini|profile.json [--project-set section.key=value ...]\n"
         "\n"
         "Profiles short training runs: warm-up steps, then measured steps, and reports per\n"
         "stage and overall tokens/s, model FLOP/s, MFU, the time split (compute / wait /\n"
         "drain / comm / reduce / optimizer), the bubble beside theory and peak RSS.\n"
         "Every wiola-train option (and its --config file) is accepted; see below.\n"
         "\n"
         "Profile options (command line only):\n"
         "  --profile-steps N        measured steps (10)\n"
         "  --warmup-steps K         unmeasured steps first, at least 1 (2)\n"
         "  --peak-tflops X          MFU peak per rank: a number (TFLOP/s), h100, h200, a100,\n"
         "                           or 'measured' (default): an sgemm on the rank's threads\n"
         "  --gemm-size N            matrix size of the measured sgemm (1024)\n"
         "  --gemm-seconds S         time spent measuring it (0.5)\n"
         "  --out DIR                write profile.csv, profile.json, trace.json (sweep.csv;\n"
         "                           projection.json and projected-trace.json with --project)\n"
         "  --no-trace               do not write trace.json\n"
         "  --verbose                also print the trainer's log\n"
         "  --sweep                  profile several layouts in this allocation, ranked by tokens/s\n"
         "  --sweep-pp LIST          pipeline sizes (default: every divisor of the world size)\n"
         "  --sweep-micro-batch LIST micro-batch sizes (default: --micro-batch)\n"
         "  --sweep-microbatches LIST micro-batches per replica (default: keep --global-batch)\n"
         "  --sweep-zero LIST        ZeRO stages (default: --zero)\n"
         "  --sweep-schedule LIST    1f1b, gpipe (default: --schedule)\n"
         "  --project FILE           predict a layout on a cluster with the schedule simulator\n"
         "                           (docs/profiling.md lists the spec keys)\n"
         "  --project-set K=V        override one spec key, e.g. run.pp=4 (repeatable)\n"
         "\n";
}

}  // namespace wiola::profile
