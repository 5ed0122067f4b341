// OpWatchdog: the state machine over tracked operations (see the header).
#include "comm/op_watchdog.hpp"

#include <iterator>
#include <sstream>

#include "comm/mpi_communicator.hpp"  // kAbortTimeout
#include "core/error.hpp"

namespace wiola::comm {

namespace {

std::string seconds_text(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

}  // namespace

OpWatchdog::CommId OpWatchdog::add_comm(std::string name, double timeout_s) {
  require(timeout_s >= 0, "comm '", name, "': timeout must be >= 0 s, got ", timeout_s);
  std::lock_guard lock(mu_);
  const CommId id = next_comm_++;
  comms_[id] = Comm{std::move(name), timeout_s, true};
  return id;
}

void OpWatchdog::set_timeout(CommId comm, double timeout_s) {
  std::lock_guard lock(mu_);
  Comm& c = comms_.at(comm);
  require(timeout_s >= 0, "comm '", c.name, "': timeout must be >= 0 s, got ", timeout_s);
  c.timeout = timeout_s;
}

void OpWatchdog::remove_comm(CommId comm) {
  std::lock_guard lock(mu_);
  comms_.at(comm).active = false;
}

OpWatchdog::OpId OpWatchdog::begin(CommId comm, std::string what) {
  std::lock_guard lock(mu_);
  require(comms_.count(comm) == 1, "OpWatchdog: unknown communicator ", comm);
  const OpId id = next_op_++;
  ops_[id] = Op{comm, std::move(what), false, std::nullopt};
  return id;
}

void OpWatchdog::waited(OpId op) {
  std::lock_guard lock(mu_);
  auto it = ops_.find(op);
  if (it != ops_.end()) it->second.waited = true;  // already done and forgotten otherwise
}

std::size_t OpWatchdog::outstanding() const {
  std::lock_guard lock(mu_);
  return ops_.size();
}

bool OpWatchdog::fired() const {
  std::lock_guard lock(mu_);
  return fired_;
}

OpWatchdog::Verdict OpWatchdog::make_verdict(CommId comm, OpId op, const std::string& why,
                                             int code) const {
  Verdict v;
  v.comm = comm;
  v.op = op;
  v.code = code;
  const std::string& name = comms_.at(comm).name;
  if (op != 0)
    v.message = ops_.at(op).what + " on '" + name + "' " + why;
  else
    v.message = "NCCL communicator '" + name + "' " + why;
  return v;
}

std::optional<OpWatchdog::Verdict> OpWatchdog::poll() {
  std::lock_guard lock(mu_);
  if (fired_) return std::nullopt;
  auto fire = [&](Verdict v) {
    fired_ = true;
    return std::optional<Verdict>(std::move(v));
  };

  // 1. Asynchronous errors of the communicators, named by their oldest
  //    outstanding operation when they have one.
  for (const auto& [id, c] : comms_) {
    if (!c.active) continue;
    if (std::optional<std::string> err = probe_.comm_error(id)) {
      OpId oldest = 0;
      for (const auto& [op_id, op] : ops_)
        if (op.comm == id) {
          oldest = op_id;
          break;
        }
      return fire(make_verdict(id, oldest, "failed: " + *err, kAbortNcclError));
    }
  }

  // 2. Each operation: forget the completed ones, stop at a failed one, and
  //    start the clock of those whose wait was reached.
  const double now = probe_.now();
  for (auto it = ops_.begin(); it != ops_.end();) {
    Op& op = it->second;
    const OpStatus st = probe_.status(it->first);
    if (st.state == OpState::Done) {
      it = ops_.erase(it);
      continue;
    }
    if (st.state == OpState::Failed)
      return fire(make_verdict(op.comm, it->first, "failed: " + st.error, kAbortNcclError));
    if (op.waited && !op.clock_start && probe_.wait_reached(it->first)) op.clock_start = now;
    ++it;
  }
  // Removed communicators are kept only while operations of theirs are.
  for (auto it = comms_.begin(); it != comms_.end();) {
    bool used = it->second.active;
    for (const auto& [op_id, op] : ops_) used = used || op.comm == it->first;
    it = used ? std::next(it) : comms_.erase(it);
  }

  // 3. The longest-running wait past its communicator's timeout.
  const Op* worst = nullptr;
  OpId worst_id = 0;
  double worst_over = 0;
  for (const auto& [id, op] : ops_) {
    if (!op.clock_start) continue;
    const double limit = comms_.at(op.comm).timeout;
    if (limit <= 0) continue;
    const double over = (now - *op.clock_start) - limit;
    if (over >= 0 && (!worst || over > worst_over)) {
      worst = &op;
      worst_id = id;
      worst_over = over;
    }
  }
  if (worst)
    return fire(make_verdict(worst->comm, worst_id,
                             "timed out after " + seconds_text(comms_.at(worst->comm).timeout) +
                                 " s",
                             kAbortTimeout));
  return std::nullopt;
}

}  // namespace wiola::comm
