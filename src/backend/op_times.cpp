#include "backend/op_times.hpp"

#include <algorithm>

namespace wiola {

OpTimes::OpTimes(Backend& backend) : backend_(backend) { backend_.set_observer(this); }

OpTimes::~OpTimes() { backend_.set_observer(nullptr); }

void OpTimes::reset() {
  seconds_.fill(0);
  calls_.fill(0);
}

void OpTimes::op_begins(Op) {
  if (!timing_) return;
  backend_.synchronize();
  start_ = std::chrono::steady_clock::now();
}

void OpTimes::op_ends(Op op) {
  if (!timing_) return;
  backend_.synchronize();
  const auto i = static_cast<std::size_t>(op);
  seconds_[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  ++calls_[i];
}

std::vector<OpTimes::Entry> OpTimes::table() const {
  std::vector<Entry> out;
  for (const OpInfo& info : kOps) {
    const auto i = static_cast<std::size_t>(info.op);
    if (calls_[i] > 0) out.push_back({info.name, info.family, seconds_[i], calls_[i]});
  }
  std::sort(out.begin(), out.end(),
            [](const Entry& a, const Entry& b) { return a.seconds > b.seconds; });
  return out;
}

}  // namespace wiola
