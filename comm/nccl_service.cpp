// The process's NCCL service: the watchdog thread, the probe it reads CUDA
// events and NCCL's asynchronous errors through, and the fatal path.
#include <chrono>
#include <cstdio>
#include <thread>

#include "comm/mpi_internal.hpp"
#include "comm/nccl_internal.hpp"
#include "core/error.hpp"

namespace wiola::comm::nccl {

namespace {

// How often the watchdog thread looks (timeouts are seconds; this is latency only).
constexpr auto kPollInterval = std::chrono::milliseconds(20);
// How long the fatal path lets ncclCommAbort take before ending the job anyway.
constexpr auto kAbortGrace = std::chrono::seconds(10);

std::mutex g_service_mu;
std::weak_ptr<Service> g_service;
std::atomic<bool> g_dying{false};

template <class F>
void park_if_ending_and(F ending) {
  if (!ending()) return;
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace

OpEvents::~OpEvents() {
  // The runtime releases an event still pending in a stream once it completes.
  if (done) cudaEventDestroy(done);
  if (cudaEvent_t r = reached.load()) cudaEventDestroy(r);
}

std::shared_ptr<Service> Service::acquire(int device) {
  std::lock_guard lock(g_service_mu);
  std::shared_ptr<Service> s = g_service.lock();
  if (s) {
    require(s->device_ == device, "comm: NCCL communicators of one process must use one CUDA "
                                  "device (have ", s->device_, ", asked for ", device, ")");
    return s;
  }
  s.reset(new Service(device));
  g_service = s;
  return s;
}

Service::Service(int device) : device_(device), watchdog_(*this) {
  thread_ = std::thread([this] { run(); });
}

Service::~Service() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Service::run() {
  // Events belong to the device's context; query them from it.
  cudaSetDevice(device_);
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    std::optional<OpWatchdog::Verdict> v = watchdog_.poll();
    if (v) fatal(v->message, v->code);
    lock.lock();
    wake_.wait_for(lock, kPollInterval, [this] { return stop_; });
  }
}

void Service::attach(OpWatchdog::CommId comm, ncclComm_t handle) {
  std::lock_guard lock(mu_);
  handles_.emplace(comm, handle);
}

void Service::detach(OpWatchdog::CommId comm) {
  std::lock_guard lock(mu_);
  handles_.erase(comm);
}

OpWatchdog::OpId Service::track(OpWatchdog::CommId comm, std::string what,
                                std::shared_ptr<OpEvents> events) {
  // begin() first, then the events: a poll in between sees an operation it
  // has no events for yet and takes it as pending (lock order: watchdog, mu_).
  const OpWatchdog::OpId op = watchdog_.begin(comm, std::move(what));
  std::lock_guard lock(mu_);
  ops_.emplace(op, std::move(events));
  return op;
}

void Service::fatal(const std::string& msg, int code) {
  // A second caller parks: the first prints the one line and ends the job.
  park_if_ending_and([] { return g_dying.exchange(true); });
  detail::die(msg, code, [this] { abort_all(); });
}

void Service::park_if_ending() {
  park_if_ending_and([] { return g_dying.load(); });
}

void Service::abort_all() {
  std::vector<ncclComm_t> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& [comm, h] : handles_) all.push_back(h);
  }
  if (all.empty()) return;
  // ncclCommAbort makes the kernels of pending operations exit and frees the
  // communicators. On a thread of its own and bounded: the job ends next
  // regardless, and a stuck abort must not keep it alive.
  auto finished = std::make_shared<std::atomic<bool>>(false);
  std::thread([all, dev = device_, finished] {
    cudaSetDevice(dev);
    for (ncclComm_t h : all) ncclCommAbort(h);
    finished->store(true);
  }).detach();
  const auto deadline = std::chrono::steady_clock::now() + kAbortGrace;
  while (!finished->load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// ---- the probe (called by watchdog_.poll(), its lock held) --------------------

double Service::now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

OpWatchdog::OpStatus Service::status(OpWatchdog::OpId op) {
  std::lock_guard lock(mu_);
  auto it = ops_.find(op);
  if (it == ops_.end()) return {};  // being tracked right now
  OpEvents& ev = *it->second;
  if (ev.host_op) {
    if (!ev.host_done.load()) return {};
    ops_.erase(it);
    return {OpWatchdog::OpState::Done, ""};
  }
  const cudaError_t rc = cudaEventQuery(ev.done);
  if (rc == cudaErrorNotReady) return {};
  if (rc == cudaSuccess) {
    ops_.erase(it);
    return {OpWatchdog::OpState::Done, ""};
  }
  return {OpWatchdog::OpState::Failed, cuda_error_text(rc)};
}

bool Service::wait_reached(OpWatchdog::OpId op) {
  std::lock_guard lock(mu_);
  auto it = ops_.find(op);
  if (it == ops_.end()) return false;
  OpEvents& ev = *it->second;
  if (ev.host_op) return true;  // the host waits from the start
  const cudaEvent_t r = ev.reached.load();
  if (!r) return false;
  // An error here is the operation's too; status() reports it.
  return cudaEventQuery(r) != cudaErrorNotReady;
}

std::optional<std::string> Service::comm_error(OpWatchdog::CommId comm) {
  std::lock_guard lock(mu_);
  auto [lo, hi] = handles_.equal_range(comm);
  for (auto it = lo; it != hi; ++it) {
    ncclResult_t async = ncclSuccess;
    const ncclResult_t rc = ncclCommGetAsyncError(it->second, &async);
    if (rc != ncclSuccess) return "ncclCommGetAsyncError: " + nccl_error_text(rc, it->second);
    if (async != ncclSuccess && async != ncclInProgress)
      return nccl_error_text(async, it->second);
  }
  return std::nullopt;
}

// ---- HostScope ----------------------------------------------------------------

HostScope::HostScope(Service& svc, OpWatchdog::CommId comm, std::string what)
    : events_(std::make_shared<OpEvents>()) {
  events_->host_op = true;
  const OpWatchdog::OpId op = svc.track(comm, std::move(what), events_);
  svc.watchdog().waited(op);
}

HostScope::~HostScope() { events_->host_done.store(true); }

// ---- types and messages -----------------------------------------------------------

ncclDataType_t reduce_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::I32: return ncclInt32;
    case DType::BF16: return ncclBfloat16;  // NCCL reduces bf16 natively
  }
  fail("comm: unknown dtype");
}

ncclRedOp_t reduce_op(ReduceOp op) { return op == ReduceOp::Sum ? ncclSum : ncclMax; }

std::string cuda_error_text(cudaError_t rc) {
  return std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
}

std::string nccl_error_text(ncclResult_t rc, ncclComm_t comm) {
  std::string s = ncclGetErrorString(rc);
  const char* last = ncclGetLastError(comm);
  if (last && *last) s += " (" + std::string(last) + ")";
  return s;
}

}  // namespace wiola::comm::nccl
