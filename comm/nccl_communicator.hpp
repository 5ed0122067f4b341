#pragma once
// The NCCL implementation of Communicator (builds with CUDA and NCCL only:
// target wiola_comm_nccl, WIOLA_WITH_NCCL). Plain C++: no CUDA or NCCL header
// leaks out, so the trainer can include it.
//
// Shape:
//  * One NCCL communicator per group, paired with the MPI communicator of the
//    same group (the "host sibling", owned). Device buffers go over NCCL;
//    host buffers (pipeline headers, flags, small host reductions), and
//    collectives that mix host and device buffers, go to the sibling, which
//    stages device buffers through host memory as any MPI communicator does.
//    Every member must pass the same kind of memory to a collective.
//  * Bootstrap: group rank 0 makes the ncclUniqueId and a broadcast on the
//    sibling delivers it (comm/unique_id.hpp): any MPI launch works.
//  * Streams: NCCL work runs on the communicator's own stream, ordered after
//    the compute stream given at construction: each operation records an
//    event on the compute stream, makes its stream wait for it, runs NCCL and
//    records a completion event. Request::wait() makes the compute stream wait
//    for that event (the host does not block), so transfers overlap compute;
//    test() queries it. Work queued on the compute stream after wait() sees
//    the results; the host sees them after a synchronize of that stream
//    (Backend::synchronize, or a read such as Backend::to_host). Buffers
//    released after wait() are safe when, as in the CUDA backend, memory is
//    freed stream-ordered on the compute stream.
//  * Point to point: NCCL has no tags and runs the operations of one
//    communicator in order, so one communicator for both directions
//    deadlocks a 1F1B pipeline (a stage's early receive blocks the send its
//    neighbour needs first). With `neighbour_channels`, each ordered pair of
//    neighbours (rank r -> r+1 and r+1 -> r) gets its own two-rank NCCL
//    communicator and stream, carrying only that direction: sends and
//    receives are issued at once, each completes on its own, and matching is
//    in posting order per (source, destination) -- whatever the tags, so both
//    sides must post the messages between them in the same order (the
//    pipeline executor does). Device messages to other peers (or without
//    channels) go to the host sibling, staged.
//  * Uneven reduce-scatter / all-gather: ncclReduceScatter / ncclAllGather
//    when the counts are equal, else one ncclReduce / ncclBroadcast per
//    non-empty shard inside one NCCL group (comm/shard_layout.hpp says why).
//  * barrier() is a host barrier, through the sibling.
//  * Failures: an NCCL or CUDA call that fails, an operation that fails on the
//    device, a communicator with an asynchronous error (ncclCommGetAsyncError),
//    or a wait that runs past the timeout (from the moment the compute stream
//    reaches it: comm/op_watchdog.hpp) -- the process's watchdog thread prints
//    one line, aborts the NCCL communicators (ncclCommAbort) and ends every
//    rank through MPI, as the MPI communicator does:
//      rank 3 (host n7): ncclAllReduce of 3 fp64 (sum) on 'world' timed out after 300 s
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "comm/communicator.hpp"
#include "comm/device_groups.hpp"
#include "comm/device_transport.hpp"
#include "comm/process_grid.hpp"

namespace wiola::comm {

struct NcclOptions {
  // The cudaStream_t that computes on the buffers (nullptr: the legacy
  // default stream).
  void* compute_stream = nullptr;
  // Seconds a wait may run, here and on the host sibling; unset: the host
  // sibling's (an MpiCommunicator's) timeout, else 0 (forever).
  std::optional<double> timeout;
  // Two-rank channels to rank - 1 and rank + 1 for device point to point.
  bool neighbour_channels = false;
};

class NcclCommunicator final : public Communicator {
 public:
  struct Impl;
  // Collective over `host` (the MPI communicator of the same group, owned
  // from here on). Uses the current CUDA device.
  NcclCommunicator(std::unique_ptr<Communicator> host, const NcclOptions& options);
  // Waits (under the watchdog) for the communicator's streams, then destroys
  // its NCCL communicators. Does not touch the compute stream, so it may
  // outlive the backend that owns it.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override;
  int size() const override;
  const std::string& name() const override;
  int max_tag() const override;
  bool reads_device_memory() const override { return true; }
  void set_device_staging(std::shared_ptr<DeviceStaging> staging) override;
  [[noreturn]] void abort(const std::string& why, int code = 1) override;

  // Watchdog timeout for waits on this communicator and its host sibling, in
  // seconds; 0 = forever. Read at every poll, so it applies to pending waits.
  void set_timeout(double seconds);
  double timeout() const;
  void set_compute_stream(void* stream);
  Communicator& host();

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
  // Splits the host sibling; the new group gets NCCL when its members have a
  // GPU each (choose_transport), else the split MPI communicator is returned.
  std::unique_ptr<Communicator> make_split(int color, int key, std::string name) override;

 private:
  std::unique_ptr<Impl> impl_;
};

// "2.28.9": the NCCL library this process runs.
std::string nccl_version();
// A fresh ncclUniqueId, as bytes (group rank 0's part of the bootstrap,
// exchange_unique_ids() delivers it). Needs no GPU.
inline constexpr std::size_t kNcclUniqueIdBytes = 128;
void make_nccl_unique_id(std::span<std::byte> out);
// This process's host and the PCI bus id of its current CUDA device (empty
// when it has none).
DeviceIdentity current_device_identity();

// The groups of the grid for a run whose buffers live on this process's
// current CUDA device: each group over NCCL when its members have a GPU each,
// else over MPI with host staging (plan_grid_transports). Collective over
// `world` (an MpiCommunicator with the device staging installed, which the
// MPI groups inherit). The pipeline group gets neighbour channels. Rank 0
// writes the one-line choice to `log` when given. The CUDA plugin installs it
// as the process's device-groups maker (comm/device_groups.hpp).
DeviceGroups make_device_groups(Communicator& world, const ProcessGrid& grid,
                                void* compute_stream, std::ostream* log = nullptr);

}  // namespace wiola::comm
