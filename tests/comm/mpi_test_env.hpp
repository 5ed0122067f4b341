#pragma once
// The world communicator of the multi-rank test run (mpi_main.cpp).
#include "comm/mpi_communicator.hpp"

namespace wiola::comm::test {
MpiCommunicator& world();
// Restores the world's chunk limit at the end of a scope.
struct ChunkLimitGuard {
  explicit ChunkLimitGuard(std::size_t limit) : saved(world().chunk_limit()) {
    world().set_chunk_limit(limit);
  }
  ~ChunkLimitGuard() { world().set_chunk_limit(saved); }
  std::size_t saved;
};
}  // namespace wiola::comm::test
