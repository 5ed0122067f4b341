#pragma once
// A common time origin for every rank's steady clock, so the events of all
// ranks can be laid side by side in one timeline.
//
// A barrier alone aligns ranks only to within its exit skew, which with the
// communicator's polling backoff can reach half a millisecond. So after the
// barrier each rank also measures its clock's offset to rank 0's by ping-pong
// (the sample with the shortest round trip of several; Cristian's method):
// exact on one node, where all ranks share the kernel's monotonic clock, and
// within half a round trip across nodes.
#include "comm/communicator.hpp"

namespace wiola::profile {

// Collective over `world`: a barrier, then the offsets. Returns the origin in
// this rank's steady-clock seconds: the instant rank 0 left the barrier.
double common_time_origin(comm::Communicator& world);

// Steady-clock seconds (the clock StageExecutor stamps its events with).
double steady_seconds();

}  // namespace wiola::profile
