// GoogleTest main for tests that call the trainer: MPI is initialised once
// (a world of one rank when run without mpirun); listing the tests starts no
// MPI.
#include <gtest/gtest.h>

#include "comm/mpi_communicator.hpp"

wiola::comm::MpiRuntime* g_profile_mpi = nullptr;

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Listing the tests (CTest's discovery, with a short timeout) needs no MPI:
  // its start-up can take seconds where the host name does not resolve.
  if (::testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  wiola::comm::MpiRuntime mpi(&argc, &argv);
  g_profile_mpi = &mpi;
  return RUN_ALL_TESTS();
}
