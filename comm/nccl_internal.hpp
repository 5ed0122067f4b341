#pragma once
// Internals of the NCCL implementation; only the nccl_*.cpp files include
// this (it brings in <nccl.h> and <cuda_runtime.h>).
//
// One Service per process, shared by its NCCL communicators: the watchdog
// thread over an OpWatchdog, the CUDA events of every tracked operation, the
// NCCL communicators to read asynchronous errors from and to abort, and the
// fatal path (one line, ncclCommAbort, MPI_Abort).
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/op_watchdog.hpp"
#include "core/dtype.hpp"

namespace wiola::comm::nccl {

// The events of one tracked operation, shared by its request and the service.
struct OpEvents {
  OpEvents() = default;
  OpEvents(const OpEvents&) = delete;
  OpEvents& operator=(const OpEvents&) = delete;
  ~OpEvents();
  // Recorded on the communication stream after the NCCL call(s).
  cudaEvent_t done = nullptr;
  // Recorded on the compute stream by wait(), just before it waits for `done`.
  std::atomic<cudaEvent_t> reached{nullptr};
  // A host-side operation (a blocking NCCL call, a stream drain): the host
  // waits for it from the start, and it is done when `host_done` is set.
  bool host_op = false;
  std::atomic<bool> host_done{false};
};

class Service final : private OpWatchdog::Probe {
 public:
  // The process's service, started on first use, for CUDA device `device`.
  // It stops when the last holder lets go.
  static std::shared_ptr<Service> acquire(int device);
  ~Service() override;
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  OpWatchdog& watchdog() { return watchdog_; }
  int device() const { return device_; }

  // NCCL communicators whose asynchronous errors count against `comm`, and
  // which the fatal path aborts.
  void attach(OpWatchdog::CommId comm, ncclComm_t handle);
  void detach(OpWatchdog::CommId comm);

  // Tracks an issued operation (its `done` event is recorded).
  OpWatchdog::OpId track(OpWatchdog::CommId comm, std::string what,
                         std::shared_ptr<OpEvents> events);

  // Prints "rank R (host H): <msg>", aborts every NCCL communicator of the
  // process (for at most a few seconds), ends every rank. Once per process:
  // a second caller waits for the end.
  [[noreturn]] void fatal(const std::string& msg, int code);
  // Once fatal() has begun, a thread that calls into an NCCL communicator
  // stops here for good: ncclCommAbort lets pending operations end without
  // their results, and nothing may go on with them until the job is ended.
  static void park_if_ending();

 private:
  explicit Service(int device);
  void run();
  void abort_all();

  double now() override;
  OpWatchdog::OpStatus status(OpWatchdog::OpId op) override;
  bool wait_reached(OpWatchdog::OpId op) override;
  std::optional<std::string> comm_error(OpWatchdog::CommId comm) override;

  const int device_;
  OpWatchdog watchdog_;
  // Lock order: the watchdog's lock, then mu_ (the probe runs under the
  // first); never the other way round.
  std::mutex mu_;
  std::map<OpWatchdog::OpId, std::shared_ptr<OpEvents>> ops_;
  std::multimap<OpWatchdog::CommId, ncclComm_t> handles_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// A blocking host call under the watchdog (communicator set-up and teardown):
// tracked from construction, done at destruction.
class HostScope {
 public:
  HostScope(Service& svc, OpWatchdog::CommId comm, std::string what);
  ~HostScope();
  HostScope(const HostScope&) = delete;
  HostScope& operator=(const HostScope&) = delete;

 private:
  std::shared_ptr<OpEvents> events_;
};

ncclDataType_t reduce_type(DType t);  // F32, F64, I32, BF16
ncclRedOp_t reduce_op(ReduceOp op);

std::string cuda_error_text(cudaError_t rc);   // "cudaErrorX: message"
std::string nccl_error_text(ncclResult_t rc, ncclComm_t comm);

}  // namespace wiola::comm::nccl
