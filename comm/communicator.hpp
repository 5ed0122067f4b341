#pragma once
// The one communication interface of the trainer. MPI implements it now
// (comm/mpi_communicator.hpp); an NCCL implementation can follow with the same
// shape. Everything the pipeline executor and the data-parallel reduction
// need goes through this class, so neither ever includes <mpi.h>.
//
// Conventions:
//  * Ranks and peers are ranks *in this communicator*, not world ranks.
//  * Counts of collectives are in elements of the given DType; point-to-point
//    sizes are in bytes.
//  * Collectives must be called by every member in the same order.
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

namespace wiola::comm {

enum class ReduceOp { Sum, Max };

std::string_view reduce_op_name(ReduceOp op);

// A pending operation. wait() blocks until it is complete (under the
// communicator's watchdog); test() never blocks. Destroying a request that is
// still pending waits for it first, so buffers are never released under MPI.
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

  // ---- point to point ------------------------------------------------------
  // Messages between one (source, destination, tag) are received in the order
  // they were sent. `tag` must be in [0, max_tag()].
  virtual std::unique_ptr<Request> isend(const void* buf, std::size_t bytes, int dst, int tag) = 0;
  virtual std::unique_ptr<Request> irecv(void* buf, std::size_t bytes, int src, int tag) = 0;
  virtual int max_tag() const = 0;
  void send(const void* buf, std::size_t bytes, int dst, int tag) {
    isend(buf, bytes, dst, tag)->wait();
  }
  void recv(void* buf, std::size_t bytes, int src, int tag) { irecv(buf, bytes, src, tag)->wait(); }

  // ---- collectives: non-blocking forms (the primitives) --------------------
  // Buffers must stay alive and untouched until the request completes.
  //
  // allreduce: in place over `count` elements. Reductions support F32, F64, I32.
  virtual std::unique_ptr<Request> iallreduce(void* buf, std::size_t count, DType t,
                                              ReduceOp op) = 0;
  // Uneven shards: rank r receives counts[r] elements, the reduction of elements
  // [offset_r, offset_r + counts[r]) of every rank's `send` (offset_r = sum of
  // counts[<r]); `send` holds sum(counts) elements. In place is allowed in one
  // form only: recv == send + offset_r (your own shard of the full buffer); the
  // rest of `send` is then unspecified afterwards.
  virtual std::unique_ptr<Request> ireduce_scatter(const void* send, void* recv,
                                                   std::span<const std::size_t> counts, DType t,
                                                   ReduceOp op) = 0;
  // recv (sum(counts) elements) = concatenation of every rank's counts[r]
  // elements of `send`. In place: send == recv + offset_r. Any DType.
  virtual std::unique_ptr<Request> iallgather(const void* send, void* recv,
                                              std::span<const std::size_t> counts, DType t) = 0;
  virtual std::unique_ptr<Request> ibroadcast(void* buf, std::size_t bytes, int root) = 0;
  virtual std::unique_ptr<Request> ibarrier() = 0;

  // ---- collectives: blocking forms -------------------------------------------
  // Defaults start the non-blocking form and wait; an implementation may
  // override them with something cheaper.
  virtual void allreduce(void* buf, std::size_t count, DType t, ReduceOp op) {
    iallreduce(buf, count, t, op)->wait();
  }
  virtual void reduce_scatter(const void* send, void* recv, std::span<const std::size_t> counts,
                              DType t, ReduceOp op) {
    ireduce_scatter(send, recv, counts, t, op)->wait();
  }
  virtual void allgather(const void* send, void* recv, std::span<const std::size_t> counts,
                         DType t) {
    iallgather(send, recv, counts, t)->wait();
  }
  virtual void broadcast(void* buf, std::size_t bytes, int root) {
    ibroadcast(buf, bytes, root)->wait();
  }
  virtual void barrier() { ibarrier()->wait(); }

  // Typed convenience forms.
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
  // "not a member": that rank gets nullptr.
  virtual std::unique_ptr<Communicator> split(int color, int key, std::string name) = 0;

  // Ends ALL ranks of the job (not just this communicator's) after printing
  // `why` with this rank's identity to stderr. Never returns.
  [[noreturn]] virtual void abort(const std::string& why, int code = 1) = 0;
};

}  // namespace wiola::comm
