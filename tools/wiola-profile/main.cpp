// wiola-profile: the numbers to choose a layout by, from short profiling runs
// (docs/profiling.md). Runs under mpirun like wiola-train and accepts its
// options and --config file; its own flags are listed by --help.
//
//   mpirun -np 2 wiola-profile --preset wiola-mini --pp 2 --profile-steps 10 --out prof
//   mpirun -np 4 wiola-profile --preset wiola-mini --sweep --sweep-micro-batch 2,4
//   wiola-profile --project cluster.ini          (or --project prof/profile.json)
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "backend/select/device_backends.hpp"
#include "backend/cpu_threads.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "pipeline/wire.hpp"
#include "profile/profile_run.hpp"
#include "train/options.hpp"
#include "wiola-profile/outputs.hpp"
#include "wiola-profile/report.hpp"
#include "wiola-profile/tool_options.hpp"
#include "core/option_errors.hpp"

using namespace wiola;
using namespace wiola::profile;

namespace {

std::vector<const char*> c_args(const std::vector<std::string>& v) {
  std::vector<const char*> out;
  for (const std::string& s : v) out.push_back(s.c_str());
  return out;
}

// A projection is local arithmetic: rank 0 does it, the others have nothing to do.
int run_projection(const ToolOptions& t, bool rank0) {
  if (!rank0) return 0;
  try {
    require(t.train_args.size() == 1, "--project takes no training options (got '",
            t.train_args.size() > 1 ? t.train_args[1] : "", "'); use --project-set");
    const Projection p = project(load_projection(t.project, t.project_set));
    std::cout << format_projection(p);
    if (!t.out_dir.empty())
      for (const std::string& path : write_projection_outputs(t.out_dir, p, t.trace))
        std::cout << "  wrote " << path << "\n";
  } catch (const Error& e) {
    std::cerr << "wiola-profile: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

// The run's largest boundary message, for the link probe (at least 64 KiB).
std::size_t probe_bytes(const TrainOptions& o) {
  const BoundaryShape s = boundary_shape(o.parallel.micro_batch, o.model.config.T, o.model.config.d,
                                         o.device.dtype, max_boundary_carry(o.model.config),
                                         o.model.config.summary, o.model.config.arch);
  return std::max<std::size_t>(s.payload_bytes(), 64 * 1024);
}

int run(const ToolOptions& t, comm::MpiCommunicator& world, const std::string& host) {
  const bool rank0 = world.rank() == 0;
  std::ostringstream quiet;
  std::optional<TrainOptions> opts;
  try {
    const std::vector<const char*> args = c_args(t.train_args);
    opts = parse_train_options(int(args.size()), args.data(), quiet);
  } catch (const Error& e) {
    throw CollectiveError(e.what());
  }
  world.set_timeout(opts->parallel.comm_timeout);
  set_cpu_threads(opts->device.threads);

  // The peak: every rank at once, so ranks sharing cores share them here too.
  world.barrier();
  const std::unique_ptr<Backend> be = make_cpu_backend();
  const PeakFlops peak = resolve_peak(t.peak, *be, t.gemm_size, t.gemm_seconds, cpu_threads());
  const LinkProbe link = probe_world_link(world, probe_bytes(*opts));

  if (t.sweep) {
    std::vector<std::string> skipped;
    const auto points = sweep_points(*opts, t.sweep_spec, world.size(), skipped);
    if (rank0) {
      char peak_text[64];
      std::snprintf(peak_text, sizeof peak_text, "%.2f GFLOP/s", peak.per_rank / 1e9);
      std::cout << "wiola-profile --sweep: " << points.size() << " layouts on " << world.size()
                << " ranks, " << t.warmup_steps << " warm-up + " << t.profile_steps
                << " measured steps each; peak " << peak_text << " per rank on rank 0 ("
                << peak.source << ")\n";
      for (const std::string& s : skipped) std::cout << "  skipped " << s << "\n";
    }
    const auto rows = run_sweep(*opts, points, t.warmup_steps, t.profile_steps, world, host, peak,
                                link, std::cout);
    if (rank0) {
      std::cout << "\nranked by tokens/s (sim: the schedule simulator's prediction from the "
                   "point's own per-stage times):\n"
                << format_sweep(rows);
      if (!t.out_dir.empty())
        for (const std::string& p : write_sweep_outputs(t.out_dir, rows))
          std::cout << "  wrote " << p << "\n";
    }
    return 0;
  }

  const ProfileResult res =
      run_profile(*opts, t.warmup_steps, t.profile_steps, world, host, peak, link);
  if (!rank0) return 0;
  if (t.verbose) std::cout << res.train_log << "\n";
  double budget = 0;
  std::string budget_name;
  if (opts->optimizer.train_tokens.kind != TokenBudget::Kind::Unset) {
    TrainOptions b = *opts;
    b.model.config = res.layout.model;  // the vocabulary train() used
    b.optimizer.steps = 0;
    budget = double(b.resolved_train_tokens());
    budget_name = "--train-tokens " + opts->optimizer.train_tokens.text();
  }
  std::cout << format_profile(res, budget, budget_name);
  if (!t.out_dir.empty())
    for (const std::string& p : write_profile_outputs(t.out_dir, res, t.trace))
      std::cout << "  wrote " << p << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  comm::MpiRuntime mpi(&argc, &argv);
  register_device_backends();
  auto& world = mpi.world();
  const bool rank0 = world.rank() == 0;
  try {
    ToolOptions t;
    try {
      t = parse_tool_options(argc, argv);
    } catch (const Error& e) {
      throw CollectiveError(e.what());
    }
    if (t.version) {
      if (rank0) print_version(std::cout, "wiola-profile");
      return 0;
    }
    if (t.help) {
      if (rank0) {
        print_tool_help(std::cout);
        const char* help[] = {"wiola-profile", "--help"};
        parse_train_options(2, help, std::cout);
      }
      return 0;
    }
    if (!t.project.empty()) return run_projection(t, rank0);
    return run(t, world, mpi.host());
  } catch (const CollectiveError& e) {
    if (rank0) std::cerr << "wiola-profile: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    // Seen by this rank alone: end every rank rather than leave them waiting.
    world.abort(std::string("wiola-profile: ") + wiola::error_text(e), 3);
  }
}
