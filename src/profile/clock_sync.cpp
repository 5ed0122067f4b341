#include "profile/clock_sync.hpp"

#include <chrono>

namespace wiola::profile {

namespace {
constexpr int kTagPing = 4094, kTagPong = 4095;
constexpr int kSamples = 8;
}  // namespace

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double common_time_origin(comm::Communicator& world) {
  world.barrier();
  double origin = steady_seconds();  // meaningful on rank 0: the common origin
  double offset = 0;                 // rank 0's clock minus this rank's
  if (world.size() == 1) return origin;
  if (world.rank() == 0) {
    // Serve every rank in turn: answer each ping with the current time.
    for (int r = 1; r < world.size(); ++r)
      for (int k = 0; k < kSamples; ++k) {
        char ping = 0;
        world.recv(&ping, 1, r, kTagPing);
        const double now = steady_seconds();
        world.send(&now, sizeof now, r, kTagPong);
      }
  } else {
    double best_rtt = 1e300;
    for (int k = 0; k < kSamples; ++k) {
      const char ping = 0;
      const double t_send = steady_seconds();
      world.send(&ping, 1, 0, kTagPing);
      double remote = 0;
      world.recv(&remote, sizeof remote, 0, kTagPong);
      const double t_recv = steady_seconds();
      if (t_recv - t_send < best_rtt) {
        best_rtt = t_recv - t_send;
        offset = remote - 0.5 * (t_send + t_recv);
      }
    }
  }
  world.broadcast(&origin, sizeof origin, 0);
  return origin - offset;
}

}  // namespace wiola::profile
