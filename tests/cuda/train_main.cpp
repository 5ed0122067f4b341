// GoogleTest main of the whole-step tests on the emulated CUDA backend: MPI is
// initialised once (one rank), and the emulated backend is registered as the
// build's "cuda" device, as a tool's main registers the real one.
#include <gtest/gtest.h>

#include "backend/cuda/cuda_backend.hpp"
#include "comm/mpi_communicator.hpp"

wiola::comm::MpiRuntime* g_mpi = nullptr;

int main(int argc, char** argv) {
  wiola::comm::MpiRuntime mpi(&argc, &argv);
  g_mpi = &mpi;
  wiola::cuda::register_backend();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
