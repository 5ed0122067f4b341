// wiola-train: trains a Wiola model, on one process or as the ranks of an
// mpirun/srun job (world size = --pp × --dp). See README.md for the options.
#include <iostream>
#include <sstream>

#include "backend/select/device_backends.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "model/param_report.hpp"
#include "train/fault_injection.hpp"
#include "train/options.hpp"
#include "train/stop_signal.hpp"
#include "train/trainer.hpp"
#include "core/option_errors.hpp"

int main(int argc, char** argv) {
  wiola::comm::MpiRuntime mpi(&argc, &argv);
  wiola::register_device_backends();
  auto& world = mpi.world();
  const bool rank0 = world.rank() == 0;
  std::ostringstream quiet;
  try {
    // Options are parsed identically on every rank, so their errors are collective.
    std::optional<wiola::TrainOptions> opts;
    try {
      opts = wiola::parse_train_options(argc, argv, rank0 ? std::cout : quiet);
    } catch (const wiola::Error& e) {
      throw wiola::CollectiveError(e.what());
    }
    if (!opts) return 0;
    if (opts->print_params) {
      if (rank0) std::cout << wiola::describe_param_counts(opts->model.config);
      return 0;
    }
    world.set_timeout(opts->parallel.comm_timeout);
    // A rank that dies (SIGKILL, the OOM killer) ends the others at once,
    // named, under srun as under mpirun.
    mpi.watch_local_peers();
    wiola::install_stop_handlers();
    // Tests set WIOLA_FAULT_INJECT to kill a rank at a chosen moment.
    std::unique_ptr<wiola::TrainObserver> fault;
    try {
      fault = wiola::fault_injector_from_env(world.rank());
    } catch (const wiola::Error& e) {
      throw wiola::CollectiveError(e.what());
    }
    const wiola::TrainSummary s = wiola::train(*opts, world, mpi.host(), std::cout, fault.get());
    if (s.stop_signal && !s.completed) return s.last_checkpoint.empty() ? 1 : wiola::kExitRequeue;
    return 0;
  } catch (const wiola::CollectiveError& e) {
    if (rank0) std::cerr << "wiola-train: " << wiola::printable_lines(e.what()) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    world.abort("wiola-train: out of memory (std::bad_alloc); lower --micro-batch, or use more "
                "pipeline stages (--pp) or ZeRO (--zero)", 3);
  } catch (const std::exception& e) {
    // Seen by this rank alone: end every rank rather than leave them waiting.
    world.abort(std::string("wiola-train: ") + wiola::printable_lines(wiola::error_text(e)), 3);
  }
}
