#pragma once
// The MPI implementation of Communicator, and the RAII runtime that starts MPI.
//
// Failure policy: every communicator uses MPI_ERRORS_RETURN and every MPI call
// is checked. An error, or a wait that runs past the watchdog timeout, prints
// one line to stderr and ends all ranks with MPI_Abort on MPI_COMM_WORLD:
//
//   rank 3 (host node7): MPI_Irecv from rank 2 tag 17 on 'pipeline' timed out after 30 s
//   rank 0 (host node1): MPI_Irecv from rank 1 tag 5 on 'world' failed: MPI_ERR_TRUNCATE: ...
//
// "rank" is the world rank; peers are named by their rank in the communicator
// (plus their world rank when the two differ). The watchdog is why every
// collective is implemented with its non-blocking MPI form: waits poll MPI_Test
// with a short backoff instead of blocking inside MPI where no timeout exists.
#include <memory>
#include <string>

#include "comm/communicator.hpp"

namespace wiola::comm {

// Exit codes passed to MPI_Abort (mpirun returns them).
inline constexpr int kAbortMpiError = 70;
inline constexpr int kAbortTimeout = 71;
inline constexpr int kAbortPeerDied = 72;

class MpiCommunicator final : public Communicator {
 public:
  struct Impl;
  explicit MpiCommunicator(std::unique_ptr<Impl> impl);
  ~MpiCommunicator() override;  // frees the MPI communicator unless it is MPI_COMM_WORLD
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override;
  int size() const override;
  const std::string& name() const override;
  int max_tag() const override;
  // True with a device-aware MPI build (Open MPI's MPIX_Query_cuda_support);
  // otherwise device buffers are staged through host memory.
  bool reads_device_memory() const override;

  [[noreturn]] void abort(const std::string& why, int code = 1) override;

  // Watchdog for every wait on this communicator, in seconds; 0 = wait forever.
  // It bounds each wait() (from its start), not the life of a request, and is
  // read when the wait starts polling, so a change applies to pending requests.
  void set_timeout(double seconds);
  double timeout() const;

  // MPI counts are ints: longer messages and collectives are split into pieces
  // of at most this many elements (bytes for point-to-point). The default is
  // the int limit; tests lower it to exercise the splitting. Every rank must
  // use the same value.
  void set_chunk_limit(std::size_t elements);
  std::size_t chunk_limit() const;

 protected:
  std::unique_ptr<Request> post_send(ConstBuffer buf, std::size_t bytes, int dst,
                                     int tag) override;
  std::unique_ptr<Request> post_recv(Buffer buf, std::size_t bytes, int src, int tag) override;
  std::unique_ptr<Request> post_allreduce(Buffer buf, std::size_t count, DType t,
                                          ReduceOp op) override;
  std::unique_ptr<Request> post_reduce_scatter(ConstBuffer send, Buffer recv,
                                               std::span<const std::size_t> counts, DType t,
                                               ReduceOp op) override;
  std::unique_ptr<Request> post_allgather(ConstBuffer send, Buffer recv,
                                          std::span<const std::size_t> counts, DType t) override;
  std::unique_ptr<Request> post_broadcast(Buffer buf, std::size_t bytes, int root) override;
  std::unique_ptr<Request> post_barrier() override;
  // The new communicator inherits this one's timeout and chunk limit.
  std::unique_ptr<Communicator> make_split(int color, int key, std::string name) override;

 private:
  std::shared_ptr<Impl> impl_;
};

enum class ThreadLevel { Funneled, Serialized };

// Initialises MPI on construction and finalises it on destruction. One per
// process, constructed before any other MPI use. Communicators obtained from
// split() should be destroyed before it (a later destruction is harmless).
//
// An exception that is thrown on every rank (a bad flag, a size mismatch) can
// simply propagate: the runtime finalises and the program exits non-zero. One
// that only some ranks see must end the job with world().abort(...), or the
// other ranks wait until their watchdog fires.
class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv, ThreadLevel level = ThreadLevel::Funneled,
             double timeout_s = 0.0);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  MpiCommunicator& world() { return *world_; }
  int world_rank() const;
  int world_size() const;
  const std::string& host() const;

  // Collective over the world: from here on, a rank that has waited on a
  // communication for a second looks (once a second) whether a rank on its
  // host has died, and if so ends every rank naming it. Under mpirun a dead
  // rank ends the job anyway; under srun the survivors would otherwise wait
  // for Slurm's KillWait (or the watchdog). Ranks on other hosts are not
  // watched (their own host's ranks watch them).
  void watch_local_peers();

 private:
  std::unique_ptr<MpiCommunicator> world_;
};

}  // namespace wiola::comm
