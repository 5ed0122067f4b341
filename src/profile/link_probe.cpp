#include "profile/link_probe.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace wiola::profile {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTag = 4093;

// Seconds per one-way trip, the best of a few batches of `reps` round trips.
double one_way(comm::Communicator& c, bool initiator, int peer, std::vector<char>& buf, int reps) {
  double best = 1e300;
  for (int batch = 0; batch < 3; ++batch) {
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) {
      if (initiator) {
        c.send(buf.data(), buf.size(), peer, kTag);
        c.recv(buf.data(), buf.size(), peer, kTag);
      } else {
        c.recv(buf.data(), buf.size(), peer, kTag);
        c.send(buf.data(), buf.size(), peer, kTag);
      }
    }
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count() / (2.0 * reps));
  }
  return best;
}

}  // namespace

LinkProbe probe_link(comm::Communicator& comm, int a, int b, std::size_t bytes) {
  LinkProbe p;
  const int me = comm.rank();
  if (a == b || (me != a && me != b)) return p;
  const bool initiator = me == a;
  const int peer = initiator ? b : a;
  std::vector<char> small(8, 0), large(std::max<std::size_t>(bytes, 8), 1);
  one_way(comm, initiator, peer, small, 5);  // warm-up: connection set-up
  p.latency_s = one_way(comm, initiator, peer, small, 100);
  const double t_large = one_way(comm, initiator, peer, large, 10);
  p.bytes = large.size();
  p.bandwidth_Bps = double(large.size()) / std::max(t_large - p.latency_s, 1e-9);
  p.measured = true;
  return p;
}

}  // namespace wiola::profile
