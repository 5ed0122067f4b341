// MpiRequest: completion, the watchdog and phase continuations.
#include <chrono>
#include <thread>

#include "comm/mpi_internal.hpp"

namespace wiola::comm {

MpiRequest::MpiRequest(std::shared_ptr<MpiCommunicator::Impl> ctx, std::string what)
    : ctx_(std::move(ctx)), what_(std::move(what)) {}

MpiRequest::~MpiRequest() {
  // Never leave MPI writing into (or reading from) a buffer the caller is
  // about to release: finish the operation first, under the watchdog.
  if (!done_) wait();
}

void MpiRequest::add(MPI_Request r, long long expect_bytes) {
  reqs_.push_back(r);
  expect_.push_back(expect_bytes);
}

bool MpiRequest::test() {
  if (done_) return true;
  for (;;) {
    bool all = true;
    for (std::size_t i = 0; i < reqs_.size(); ++i) {
      if (reqs_[i] == MPI_REQUEST_NULL) continue;
      int flag = 0;
      MPI_Status st;
      ctx_->check(MPI_Test(&reqs_[i], &flag, &st), what_);
      if (!flag) {
        all = false;
        continue;
      }
      if (expect_[i] >= 0) {
        int got = 0;
        ctx_->check(MPI_Get_count(&st, MPI_BYTE, &got), what_ + " (MPI_Get_count)");
        if (got != expect_[i])
          ctx_->fail(
              what_,
              "received " + std::to_string(got) + " bytes, expected " + std::to_string(expect_[i]),
              kAbortMpiError);
      }
    }
    if (!all) return false;
    reqs_.clear();
    expect_.clear();
    if (next_ && next_(*this)) continue;  // the next phase is posted; poll it at once
    next_ = nullptr;
    done_ = true;
    return true;
  }
}

void MpiRequest::wait() {
  if (test()) return;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  // Spin briefly (latency of pipeline hand-offs), then sleep with a capped
  // exponential backoff so a long wait does not burn a core.
  auto nap = std::chrono::microseconds(10);
  constexpr auto max_nap = std::chrono::microseconds(500);
  double next_look = 1.0;  // seconds of waiting before the next look at the peers
  for (int polls = 0; !test(); ++polls) {
    const double limit = ctx_->timeout;
    const double waited = std::chrono::duration<double>(clock::now() - start).count();
    if (limit > 0 && waited >= limit) {
      // A collective cannot say which member is missing; on a lost node it
      // is one of those on other hosts, so name them.
      const std::string remote = peer_ < 0 ? ctx_->remote_members() : "";
      ctx_->fail(what_,
                 "timed out after " + detail::format_seconds(limit) + " s" +
                     (remote.empty() ? "" : " (its members on other hosts: " + remote + ")"),
                 kAbortTimeout);
    }
    if (waited >= next_look) {
      next_look = waited + 1.0;
      const std::string dead = detail::dead_local_peer();
      if (!dead.empty())
        ctx_->fail(what_, "cannot complete: " + dead + "; ending every rank", kAbortPeerDied);
    }
    if (polls < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, max_nap);
    }
  }
}

}  // namespace wiola::comm
