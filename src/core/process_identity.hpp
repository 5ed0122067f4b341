#pragma once
// Who this process is in a job, from the launcher's environment (mpirun,
// srun, or neither), for error messages of layers that know nothing of MPI
// (the CUDA backend) and for choosing a device per rank.
#include <string>

namespace wiola {

struct ProcessIdentity {
  int rank = 0;        // OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID; 0 alone
  int local_rank = 0;  // OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID
  int local_size = 1;  // ranks on this machine: OMPI_COMM_WORLD_LOCAL_SIZE or MPI_LOCALNRANKS
  std::string host;    // gethostname()
  std::string describe() const;  // "rank 3 (host node7)"
};

const ProcessIdentity& process_identity();

}  // namespace wiola
