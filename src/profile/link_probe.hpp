#pragma once
// Point-to-point latency and bandwidth between two ranks of a communicator,
// by ping-pong: the link parameters the schedule simulator needs to predict a
// measured run (docs/profiling.md, "Simulator").
#include <cstddef>

#include "comm/communicator.hpp"

namespace wiola::profile {

struct LinkProbe {
  bool measured = false;
  double latency_s = 0;      // one-way time of an 8-byte message
  double bandwidth_Bps = 0;  // bytes / (one-way time of a `bytes` message - latency)
  std::size_t bytes = 0;
};

// Collective over `comm` in the sense that every rank must call it (ranks
// other than a and b return at once with measured = false). The result is
// valid on ranks a and b.
LinkProbe probe_link(comm::Communicator& comm, int a, int b, std::size_t bytes);

}  // namespace wiola::profile
