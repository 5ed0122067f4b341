#include "wiola-profile/tool_options.hpp"

#include <boost/program_options.hpp>
#include <ostream>

#include "core/error.hpp"
#include "core/option_help.hpp"
#include "profile/peak.hpp"
#include "wiola-profile/comma_list.hpp"
#include "wiola-profile/sweep.hpp"
#include "core/option_errors.hpp"

namespace po = boost::program_options;

namespace wiola::profile {

namespace {

// What the flags are read into besides ToolOptions' own fields.
struct Lists {
  CommaList<int> pp, micro_batch, microbatches, zero;
  CommaList<std::string> schedule;
  std::vector<std::string> project_set;
  bool no_trace = false;
};

// The profiler's flags, bound to `t` and `l`, grouped as --help shows them
// (with ToolOptions' defaults).
po::options_description tool_flags(ToolOptions& t, Lists& l) {
  po::options_description measure("Measurement");
  measure.add_options()
      ("profile-steps", po::value(&t.profile_steps)->default_value(t.profile_steps)
           ->value_name("N"), "measured steps")
      ("warmup-steps", po::value(&t.warmup_steps)->default_value(t.warmup_steps)
           ->value_name("K"), "unmeasured steps first, at least 1 (the ranks are aligned "
                              "after them)")
      ("peak-tflops", po::value(&t.peak)->default_value(t.peak)->value_name("X"),
       "MFU peak per rank: a number (TFLOP/s), h100, h200, a100, or 'measured': an sgemm on the "
       "rank's threads")
      ("gemm-size", po::value(&t.gemm_size)->default_value(t.gemm_size)->value_name("N"),
       "matrix size of the measured sgemm")
      ("gemm-seconds", po::value(&t.gemm_seconds)->default_value(t.gemm_seconds)
           ->value_name("S"), "time spent measuring it");
  po::options_description output("Output");
  output.add_options()
      ("out", po::value(&t.out_dir)->value_name("DIR"),
       "write profile.csv, profile.json, trace.json (sweep.csv; projection.json and "
       "projected-trace.json with --project)")
      ("no-trace", po::bool_switch(&l.no_trace), "do not write trace.json")
      ("verbose", po::bool_switch(&t.verbose), "also print the trainer's log");
  po::options_description sweep("Sweep");
  sweep.add_options()
      ("sweep", po::bool_switch(&t.sweep),
       "profile several layouts in this allocation, ranked by tokens/s")
      ("sweep-pp", po::value(&l.pp)->value_name("LIST"),
       "pipeline sizes (default: every divisor of the world size)")
      ("sweep-micro-batch", po::value(&l.micro_batch)->value_name("LIST"),
       "micro-batch sizes (default: --micro-batch)")
      ("sweep-microbatches", po::value(&l.microbatches)->value_name("LIST"),
       "micro-batches per replica (default: keep --global-batch)")
      ("sweep-zero", po::value(&l.zero)->value_name("LIST"), "ZeRO stages (default: --zero)")
      ("sweep-schedule", po::value(&l.schedule)->value_name("LIST"),
       "1f1b, gpipe, interleaved[:V], zb-h1, zb-h2 (default: --schedule)");
  po::options_description project("Projection");
  project.add_options()
      ("project", po::value(&t.project)->value_name("FILE"),
       "predict a layout on a cluster with the schedule simulator: a spec (INI) or a "
       "profile.json (docs/profiling.md lists the spec keys)")
      ("project-set", po::value(&l.project_set)->composing()->value_name("K=V"),
       "override one spec key, e.g. run.pp=4 (repeatable)");
  po::options_description all("Profile options (command line only)");
  all.add_options()("help,h", "this help, then wiola-train's")("version", "print the version and exit");
  all.add(measure).add(output).add(sweep).add(project);
  return all;
}

// No abbreviations: an abbreviation of a profiler flag may be a whole
// wiola-train flag (--warmup is not --warmup-steps).
constexpr int kStyle = po::command_line_style::default_style &
                       ~po::command_line_style::allow_guessing;

}  // namespace

ToolOptions parse_tool_options(int argc, const char* const* argv) {
  ToolOptions t;
  Lists l;
  const po::options_description flags = tool_flags(t, l);
  po::variables_map vm;
  std::vector<std::string> rest;
  try {
    const po::parsed_options parsed =
        po::command_line_parser(argc, argv).options(flags).style(kStyle).allow_unregistered().run();
    po::store(parsed, vm);
    po::notify(vm);
    rest = po::collect_unrecognized(parsed.options, po::include_positional);
  } catch (const po::error& e) {
    fail(wiola::error_text(e));
  }
  t.help = vm.count("help") > 0;
  t.version = vm.count("version") > 0;
  t.trace = !l.no_trace;
  t.sweep_spec = {l.pp.items, l.micro_batch.items, l.microbatches.items, l.zero.items,
                  l.schedule.items};
  t.project_set = l.project_set;
  // Everything that is not the profiler's, in order, is wiola-train's.
  t.train_args.push_back(argc > 0 ? argv[0] : "wiola-profile");
  t.train_args.insert(t.train_args.end(), rest.begin(), rest.end());

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
  for (const auto& s : t.sweep_spec.schedule) parse_sweep_schedule(s, 2);  // throws on a bad item
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
         "\n";
  ToolOptions defaults;
  Lists lists;
  po::options_description flags = tool_flags(defaults, lists);
  tidy_real_defaults(flags);
  out << flags << "\n";
}

}  // namespace wiola::profile
