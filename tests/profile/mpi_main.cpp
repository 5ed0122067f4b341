// GoogleTest main for tests that call the trainer: MPI is initialised once
// (a world of one rank when run without mpirun).
#include <gtest/gtest.h>

#include "comm/mpi_communicator.hpp"

wiola::comm::MpiRuntime* g_profile_mpi = nullptr;

int main(int argc, char** argv) {
  wiola::comm::MpiRuntime mpi(&argc, &argv);
  g_profile_mpi = &mpi;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
