#pragma once
// The wall time of every op called through a backend, by op (forward and
// backward separately), while timing is on. Each timed op is bracketed by
// synchronize(), so on a device the times are the ops' own (and the run is
// slower): a measured pass for the time split per op family (wiola-bench
// --time-split), never a throughput run.
#include <array>
#include <chrono>
#include <string_view>
#include <vector>

#include "backend/backend.hpp"

namespace wiola {

class OpTimes final : public OpObserver {
 public:
  // Observes `backend` until destroyed.
  explicit OpTimes(Backend& backend);
  ~OpTimes() override;
  OpTimes(const OpTimes&) = delete;
  OpTimes& operator=(const OpTimes&) = delete;

  void set_timing(bool on) { timing_ = on; }
  void reset();
  struct Entry {
    std::string_view op;      // "linear_fwd"
    std::string_view family;  // "linear (GEMM)"
    double seconds = 0;
    long calls = 0;
  };
  // Every op timed since the last reset, the most expensive first.
  std::vector<Entry> table() const;

  void op_begins(Op op) override;
  void op_ends(Op op) override;

 private:
  Backend& backend_;
  bool timing_ = false;
  std::chrono::steady_clock::time_point start_;
  std::array<double, kOps.size()> seconds_{};
  std::array<long, kOps.size()> calls_{};
};

}  // namespace wiola
