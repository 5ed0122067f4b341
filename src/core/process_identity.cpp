#include "core/process_identity.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace wiola {

namespace {

int first_int_env(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const char* v = std::getenv(n); v && *v) {
      char* end = nullptr;
      const long x = std::strtol(v, &end, 10);
      if (end && *end == '\0' && x >= 0) return static_cast<int>(x);
    }
  return 0;
}

}  // namespace

std::string ProcessIdentity::describe() const {
  return "rank " + std::to_string(rank) + " (host " + host + ")";
}

const ProcessIdentity& process_identity() {
  static const ProcessIdentity id = [] {
    ProcessIdentity p;
    p.rank = first_int_env({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"});
    p.local_rank =
        first_int_env({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"});
    p.local_size =
        std::max(1, first_int_env({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}));
    char buf[256] = {};
    p.host = gethostname(buf, sizeof buf - 1) == 0 ? buf : "?";
    return p;
  }();
  return id;
}

}  // namespace wiola
