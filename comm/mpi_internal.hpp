#pragma once
// Internals shared by the MPI implementation files; not for use outside comm/.
// Including <mpi.h> is confined to these files (the C++ bindings are skipped).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/mpi_communicator.hpp"

namespace wiola::comm::detail {

// This process's world rank and host, for messages. Computed on first use
// (MPI must be initialised by then).
struct Identity {
  int world_rank = -1;
  std::string host = "?";
};
const Identity& identity();

// Prints "rank R (host H): <msg>" to stderr and ends every rank. Never returns.
// `before_abort`, when given, runs after the line is printed and before
// MPI_Abort (the NCCL implementation aborts its communicators there).
[[noreturn]] void die(const std::string& msg, int code,
                      const std::function<void()>& before_abort = {});

std::string mpi_error_string(int rc);
std::string format_seconds(double s);

// The peer watch (peer_watch.cpp): watch_local_peers() (collective over the
// world) records the ranks on this host whose processes this one can see;
// dead_local_peer() names one of them that has died since ("" when none).
// It also records every rank's host: host_of(world_rank) ("" before the
// watch, or for a rank out of range), so that a wait on a rank of another
// node names that node.
void watch_local_peers();
std::string dead_local_peer();
std::string host_of(int world_rank);

// Checks an MPI call that is not tied to a communicator (init, finalize, world setup).
void check_global(int rc, const char* call);

MPI_Datatype mpi_type(DType t);         // bytes-preserving type for any DType
MPI_Datatype mpi_reduce_type(DType t);  // F32, F64, I32 only (throws otherwise)
MPI_Op mpi_op(ReduceOp op);

// True when this MPI library reads and writes device (CUDA) memory itself.
bool device_aware_mpi();

// Splits n units into pieces of at most `limit` (<= INT_MAX); always at least
// one piece, so a zero-length message or collective still happens.
template <class F>
void for_each_piece(std::size_t n, std::size_t limit, F&& f) {
  std::size_t off = 0;
  do {
    const std::size_t len = std::min(limit, n - off);
    f(off, static_cast<int>(len));
    off += len;
  } while (off < n);
}

}  // namespace wiola::comm::detail

namespace wiola::comm {

// Shared by a communicator and its requests, so a request can still report
// (and the MPI communicator stays alive) if it outlives its communicator.
struct MpiCommunicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;  // MPI_Comm_free on destruction
  std::string name;
  int rank = 0;
  int size = 0;
  int tag_ub = 32767;
  std::vector<int> world_ranks;  // world rank of each member, for messages
  double timeout = 0.0;
  std::size_t chunk_limit = 0;

  // Sets MPI_ERRORS_RETURN on `c` and reads its shape. Takes ownership when `own`.
  static std::unique_ptr<Impl> wrap(MPI_Comm c, std::string name, bool own, double timeout,
                                    std::size_t chunk_limit);
  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();

  // "rank 2", or "rank 2 (world 5)" when the ranks differ, with the host
  // when it is known and not this one's: "rank 2 (world 5, host node3)".
  std::string peer(int r) const;
  // The members on other hosts, "world 5 on node3, world 7 on node4" (at
  // most 8, then a count); "" when there are none or the hosts are unknown.
  std::string remote_members() const;
  // On rc != MPI_SUCCESS: "<what> on '<name>' failed: <MPI error string>", then abort.
  void check(int rc, const std::string& what) const {
    if (rc != MPI_SUCCESS) fail_call(rc, what);
  }
  [[noreturn]] void fail_call(int rc, const std::string& what) const;
  [[noreturn]] void fail(const std::string& what, const std::string& why, int code) const;
};

// A Request over a sequence of phases: each phase is a set of MPI requests;
// when all of a phase's requests are complete the continuation runs, which may
// copy results and post the next phase (returning true) or end (false).
class MpiRequest final : public Request {
 public:
  using Continuation = std::function<bool(MpiRequest&)>;
  MpiRequest(std::shared_ptr<MpiCommunicator::Impl> ctx, std::string what);
  ~MpiRequest() override;
  MpiRequest(const MpiRequest&) = delete;
  MpiRequest& operator=(const MpiRequest&) = delete;

  void wait() override;
  bool test() override;

  // Adds an already-posted MPI request to the current phase. For a receive,
  // `expect_bytes` >= 0 checks that the message had exactly that size.
  void add(MPI_Request r, long long expect_bytes = -1);
  void then(Continuation next) { next_ = std::move(next); }
  const std::string& what() const { return what_; }
  MpiCommunicator::Impl& ctx() const { return *ctx_; }
  // The one rank this request waits on (a send or receive); a timeout then
  // names it alone instead of the group's members on other hosts.
  void set_peer(int r) { peer_ = r; }

 private:
  std::shared_ptr<MpiCommunicator::Impl> ctx_;
  std::string what_;  // "MPI_Irecv from rank 2 tag 17"
  std::vector<MPI_Request> reqs_;
  std::vector<long long> expect_;
  Continuation next_;
  int peer_ = -1;
  bool done_ = false;
};

}  // namespace wiola::comm
