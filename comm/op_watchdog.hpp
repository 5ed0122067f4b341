#pragma once
// The decision logic of the NCCL watchdog: a state machine over the tracked
// operations of a process's NCCL communicators. It decides; it does not see
// the device and does not end anything. The NCCL implementation feeds it
// from a thread (CUDA events, ncclCommGetAsyncError, the steady clock) and
// carries out its verdict; tests feed it scripted errors and times.
//
// An operation's life:
//   begin()   it is issued (enqueued on a communication stream): tracked;
//   waited()  someone waits for it: a compute stream that will not run past
//             it until it completes, or the host itself;
//   the wait is reached: the compute stream got to that point (or, for the
//             host, at once). From here the timeout clock runs, so the
//             timeout bounds each wait from its start, as the MPI
//             communicator's does; an operation nobody waits for yet (a
//             receive posted early, a collective the host has run ahead of)
//             is never timed out;
//   done      completed: forgotten.
// poll() returns at most one verdict in the life of the watchdog: the first
// failure it sees (an operation that failed, a communicator with an
// asynchronous error), else the operation whose wait has run longest past
// its communicator's timeout. Failures come before timeouts (a timeout is
// usually their consequence, and the error says more).
//
// Thread safety: every member may be called from any thread; the probe is
// called from poll() only, with the watchdog's lock held, so it must not call
// back into the watchdog.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace wiola::comm {

// Exit code of a failed NCCL operation or communicator (timeouts use
// kAbortTimeout, comm/mpi_communicator.hpp).
inline constexpr int kAbortNcclError = 72;

class OpWatchdog {
 public:
  using OpId = std::uint64_t;
  using CommId = int;

  enum class OpState { Pending, Done, Failed };
  struct OpStatus {
    OpState state = OpState::Pending;
    std::string error;  // when Failed
  };

  // What the watchdog observes: the clock and the error source.
  class Probe {
   public:
    virtual ~Probe() = default;
    virtual double now() = 0;                   // seconds on a monotonic clock
    virtual OpStatus status(OpId op) = 0;       // asked until Done or Failed
    virtual bool wait_reached(OpId op) = 0;     // asked after waited(), until true
    virtual std::optional<std::string> comm_error(CommId comm) = 0;  // an asynchronous error
  };

  // "<call> on '<comm>' timed out after 5 s": what the rank prints before
  // every rank is ended with `code`.
  struct Verdict {
    CommId comm = -1;
    OpId op = 0;  // 0 when the failure is the communicator's, with no operation pending
    std::string message;
    int code = 0;
  };

  explicit OpWatchdog(Probe& probe) : probe_(probe) {}
  OpWatchdog(const OpWatchdog&) = delete;
  OpWatchdog& operator=(const OpWatchdog&) = delete;

  // A communicator: its name (in messages) and timeout in seconds (0 = none).
  CommId add_comm(std::string name, double timeout_s);
  // Read at every poll, so a change applies to operations already waited on.
  void set_timeout(CommId comm, double timeout_s);
  // No more errors are read from it; its operations stay tracked until done.
  void remove_comm(CommId comm);

  // `what` names the call for messages: "ncclAllReduce of 4 fp32 (sum)".
  OpId begin(CommId comm, std::string what);
  void waited(OpId op);

  std::optional<Verdict> poll();

  std::size_t outstanding() const;
  bool fired() const;

 private:
  struct Comm {
    std::string name;
    double timeout = 0;
    bool active = true;
  };
  struct Op {
    CommId comm = -1;
    std::string what;
    bool waited = false;
    std::optional<double> clock_start;  // when the wait was first seen reached
  };
  Verdict make_verdict(CommId comm, OpId op, const std::string& why, int code) const;

  Probe& probe_;
  mutable std::mutex mu_;
  std::map<CommId, Comm> comms_;
  std::map<OpId, Op> ops_;  // ordered: issue order
  CommId next_comm_ = 0;
  OpId next_op_ = 1;
  bool fired_ = false;
};

}  // namespace wiola::comm
