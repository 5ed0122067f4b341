#pragma once
// The one communication interface of the trainer. MPI implements it
// (comm/mpi_communicator.hpp), and NCCL for device buffers
// (comm/nccl_communicator.hpp, builds with CUDA).
// Everything the pipeline executor and the data-parallel reduction need goes
// through this class, so neither ever includes <mpi.h> or <nccl.h>.
//
// Conventions:
//  * Ranks and peers are ranks *in this communicator*, not world ranks.
//  * Counts of collectives are in elements of the given DType; point-to-point
//    sizes are in bytes.
//  * Collectives must be called by every member in the same order.
//  * Every buffer says which memory it lives in (Device::CPU is host memory).
//    A transport that cannot read device memory (MPI without device support)
//    gets device buffers staged through host copies by this class, with the
//    DeviceStaging the owner installed; one that can (NCCL, device-aware MPI)
//    gets the device pointers as they are.
//  * A failure of the transport (an error, a peer that died, a wait that runs
//    past the timeout) is not an exception: it ends every rank of the job,
//    because a half-failed collective cannot be recovered from locally.
//    Invalid arguments (a peer out of range, a size mismatch) throw
//    wiola::Error before anything is sent.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace wiola::comm {

enum class ReduceOp { Sum, Max };

std::string_view reduce_op_name(ReduceOp op);

// A buffer and the memory it lives in.
struct Buffer {
  void* data = nullptr;
  Device memory = Device::CPU;
};
struct ConstBuffer {
  const void* data = nullptr;
  Device memory = Device::CPU;
};

// Copies between device memory and host memory, for transports that only read
// host memory. The backend that owns the device memory provides it.
class DeviceStaging {
 public:
  virtual ~DeviceStaging() = default;
  virtual void to_host(const void* device_src, void* host_dst, std::size_t bytes) = 0;
  virtual void to_device(const void* host_src, void* device_dst, std::size_t bytes) = 0;
};

// A pending operation. wait() blocks until it is complete (under the
// communicator's watchdog); test() never blocks. Destroying a request that is
// still pending waits for it first, so buffers are never released under the
// transport.
//
// Device buffers on a transport that reads device memory and runs on its own
// stream (NCCL, comm/nccl_communicator.hpp): "complete" is device-side.
// wait() does not block the host; it orders the compute stream the
// communicator was given after the operation, so work queued on that stream
// after wait() sees the results, and the host sees them after that stream is
// synchronised (Backend::synchronize, or a host read such as
// Backend::to_host). Buffers may be released after wait() when their memory
// is freed stream-ordered on the compute stream (the CUDA backend's is).
// test() returns true once the operation has finished on the device. The
// watchdog times a device wait from the moment the compute stream reaches it.
// Host buffers on such a communicator complete on the host, as above.
class Request {
 public:
  virtual ~Request() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;  // true once complete; further calls keep returning true
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "world", "pipeline", "data", "embedding": used in every error message.
  virtual const std::string& name() const = 0;
  // Tags of point-to-point messages are in [0, max_tag()].
  virtual int max_tag() const = 0;
  // True when the transport reads and writes device memory itself.
  virtual bool reads_device_memory() const = 0;

  // How device buffers reach a transport that only reads host memory. Shared
  // with the communicators split() makes from this one. (Virtual: a transport
  // that hands some buffers to a sibling communicator passes it on.)
  virtual void set_device_staging(std::shared_ptr<DeviceStaging> staging) {
    staging_ = std::move(staging);
  }
  const std::shared_ptr<DeviceStaging>& device_staging() const { return staging_; }

  // ---- point to point ------------------------------------------------------
  // Messages between one (source, destination, tag) are received in the order
  // they were sent.
  std::unique_ptr<Request> isend(ConstBuffer buf, std::size_t bytes, int dst, int tag);
  std::unique_ptr<Request> irecv(Buffer buf, std::size_t bytes, int src, int tag);
  // Whole contiguous tensors, in their own memory.
  std::unique_ptr<Request> isend(const Tensor& t, int dst, int tag);
  std::unique_ptr<Request> irecv(const Tensor& t, int src, int tag);
  // Host memory.
  std::unique_ptr<Request> isend(const void* host, std::size_t bytes, int dst, int tag) {
    return isend(ConstBuffer{host}, bytes, dst, tag);
  }
  std::unique_ptr<Request> irecv(void* host, std::size_t bytes, int src, int tag) {
    return irecv(Buffer{host}, bytes, src, tag);
  }
  void send(const void* host, std::size_t bytes, int dst, int tag) {
    isend(host, bytes, dst, tag)->wait();
  }
  void recv(void* host, std::size_t bytes, int src, int tag) {
    irecv(host, bytes, src, tag)->wait();
  }

  // ---- collectives: non-blocking forms (the primitives) --------------------
  // Buffers must stay alive and untouched until the request completes.
  //
  // allreduce: in place over `count` elements. Reductions support F32, F64,
  // I32 (and BF16 where the transport reduces it natively).
  std::unique_ptr<Request> iallreduce(Buffer buf, std::size_t count, DType t, ReduceOp op);
  // Uneven shards: rank r receives counts[r] elements, the reduction of elements
  // [offset_r, offset_r + counts[r]) of every rank's `send` (offset_r = sum of
  // counts[<r]); `send` holds sum(counts) elements. In place is allowed in one
  // form only: recv == send + offset_r (your own shard of the full buffer); the
  // rest of `send` is then unspecified afterwards.
  std::unique_ptr<Request> ireduce_scatter(ConstBuffer send, Buffer recv,
                                           std::span<const std::size_t> counts, DType t,
                                           ReduceOp op);
  // recv (sum(counts) elements) = concatenation of every rank's counts[r]
  // elements of `send`. In place: send == recv + offset_r. Any DType.
  std::unique_ptr<Request> iallgather(ConstBuffer send, Buffer recv,
                                      std::span<const std::size_t> counts, DType t);
  std::unique_ptr<Request> ibroadcast(Buffer buf, std::size_t bytes, int root);
  std::unique_ptr<Request> ibarrier() { return post_barrier(); }

  // Host memory.
  std::unique_ptr<Request> iallreduce(void* host, std::size_t count, DType t, ReduceOp op) {
    return iallreduce(Buffer{host}, count, t, op);
  }
  std::unique_ptr<Request> ireduce_scatter(const void* send, void* recv,
                                           std::span<const std::size_t> counts, DType t,
                                           ReduceOp op) {
    return ireduce_scatter(ConstBuffer{send}, Buffer{recv}, counts, t, op);
  }
  std::unique_ptr<Request> iallgather(const void* send, void* recv,
                                      std::span<const std::size_t> counts, DType t) {
    return iallgather(ConstBuffer{send}, Buffer{recv}, counts, t);
  }

  // Tensor forms (contiguous tensors; counts in elements of the tensor's dtype).
  std::unique_ptr<Request> iallreduce(const Tensor& t, ReduceOp op);
  std::unique_ptr<Request> ireduce_scatter(const Tensor& send, const Tensor& recv,
                                           std::span<const std::size_t> counts, ReduceOp op);
  std::unique_ptr<Request> iallgather(const Tensor& send, const Tensor& recv,
                                      std::span<const std::size_t> counts);

  // ---- collectives: blocking forms -------------------------------------------
  void allreduce(const Tensor& t, ReduceOp op) { iallreduce(t, op)->wait(); }
  void reduce_scatter(const Tensor& send, const Tensor& recv, std::span<const std::size_t> counts,
                      ReduceOp op) {
    ireduce_scatter(send, recv, counts, op)->wait();
  }
  void allgather(const Tensor& send, const Tensor& recv, std::span<const std::size_t> counts) {
    iallgather(send, recv, counts)->wait();
  }
  // Host memory.
  void allreduce(void* host, std::size_t count, DType t, ReduceOp op) {
    iallreduce(Buffer{host}, count, t, op)->wait();
  }
  void reduce_scatter(const void* send, void* recv, std::span<const std::size_t> counts, DType t,
                      ReduceOp op) {
    ireduce_scatter(ConstBuffer{send}, Buffer{recv}, counts, t, op)->wait();
  }
  void allgather(const void* send, void* recv, std::span<const std::size_t> counts, DType t) {
    iallgather(ConstBuffer{send}, Buffer{recv}, counts, t)->wait();
  }
  void broadcast(void* host, std::size_t bytes, int root) {
    ibroadcast(Buffer{host}, bytes, root)->wait();
  }
  void barrier() { ibarrier()->wait(); }

  // Typed convenience forms (host memory).
  template <class T>
  void allreduce(std::span<T> v, ReduceOp op) {
    allreduce(v.data(), v.size(), dtype_of<T>::value, op);
  }
  template <class T>
  T allreduce_value(T v, ReduceOp op) {
    allreduce(&v, 1, dtype_of<T>::value, op);
    return v;
  }

  // ---- groups ------------------------------------------------------------------
  // Collective over this communicator. Ranks with the same `color` form one new
  // communicator, ordered by `key` (ties by rank here). A negative color means
  // "not a member": that rank gets nullptr. The new one shares the staging.
  std::unique_ptr<Communicator> split(int color, int key, std::string name);

  // Ends ALL ranks of the job (not just this communicator's) after printing
  // `why` with this rank's identity to stderr. Never returns.
  [[noreturn]] virtual void abort(const std::string& why, int code = 1) = 0;

 protected:
  // What an implementation provides. Buffers given to these are host memory,
  // or device memory when reads_device_memory() is true.
  virtual std::unique_ptr<Request> post_send(ConstBuffer buf, std::size_t bytes, int dst,
                                             int tag) = 0;
  virtual std::unique_ptr<Request> post_recv(Buffer buf, std::size_t bytes, int src, int tag) = 0;
  virtual std::unique_ptr<Request> post_allreduce(Buffer buf, std::size_t count, DType t,
                                                  ReduceOp op) = 0;
  virtual std::unique_ptr<Request> post_reduce_scatter(ConstBuffer send, Buffer recv,
                                                       std::span<const std::size_t> counts,
                                                       DType t, ReduceOp op) = 0;
  virtual std::unique_ptr<Request> post_allgather(ConstBuffer send, Buffer recv,
                                                  std::span<const std::size_t> counts,
                                                  DType t) = 0;
  virtual std::unique_ptr<Request> post_broadcast(Buffer buf, std::size_t bytes, int root) = 0;
  virtual std::unique_ptr<Request> post_barrier() = 0;
  virtual std::unique_ptr<Communicator> make_split(int color, int key, std::string name) = 0;

 private:
  bool staged(Device memory) const;
  DeviceStaging& staging() const;
  std::shared_ptr<DeviceStaging> staging_;
};

}  // namespace wiola::comm
