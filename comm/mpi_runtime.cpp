// MpiRuntime: MPI_Init_thread / MPI_Finalize and the world communicator.
#include <climits>
#include <cstdio>

#include "comm/mpi_internal.hpp"
#include "core/error.hpp"

namespace wiola::comm {

MpiRuntime::MpiRuntime(int* argc, char*** argv, ThreadLevel level, double timeout_s) {
  int initialized = 0;
  detail::check_global(MPI_Initialized(&initialized), "MPI_Initialized");
  require(!initialized, "MPI is already initialised: construct one MpiRuntime per process");
  const int want = level == ThreadLevel::Funneled ? MPI_THREAD_FUNNELED : MPI_THREAD_SERIALIZED;
  int provided = MPI_THREAD_SINGLE;
  // MPI_COMM_WORLD's default handler is "errors are fatal" until set below, so
  // a failure of MPI_Init_thread itself is reported by MPI.
  detail::check_global(MPI_Init_thread(argc, argv, want, &provided), "MPI_Init_thread");
  detail::check_global(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                       "MPI_Comm_set_errhandler(MPI_COMM_WORLD)");
  (void)detail::identity();  // resolve rank and host now, while MPI is healthy
  if (provided < want)
    detail::die("MPI_Init_thread provided thread level " + std::to_string(provided) +
                    ", below the requested " + std::to_string(want),
                kAbortMpiError);
  world_ = std::make_unique<MpiCommunicator>(MpiCommunicator::Impl::wrap(
      MPI_COMM_WORLD, "world", false, timeout_s, static_cast<std::size_t>(INT_MAX)));
}

MpiRuntime::~MpiRuntime() {
  world_.reset();
  int finalized = 0;
  if (MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return;
  const int rc = MPI_Finalize();
  if (rc != MPI_SUCCESS) {
    // Nothing can be aborted any more; report and let the exit code speak.
    const auto& id = detail::identity();
    std::fprintf(stderr, "rank %d (host %s): MPI_Finalize failed: %s\n", id.world_rank,
                 id.host.c_str(), detail::mpi_error_string(rc).c_str());
  }
}

void MpiRuntime::watch_local_peers() { detail::watch_local_peers(); }

int MpiRuntime::world_rank() const { return world_->rank(); }
int MpiRuntime::world_size() const { return world_->size(); }
const std::string& MpiRuntime::host() const { return detail::identity().host; }

}  // namespace wiola::comm
