// MpiCommunicator collectives, all on the non-blocking MPI forms so that every
// wait runs under the watchdog (mpi_request.cpp).
//
// MPI counts and displacements are ints. Allreduce and broadcast are split into
// independent pieces. Reduce-scatter and allgather with uneven shards are run
// in rounds when the total does not fit one call: round j moves elements
// [j*len, (j+1)*len) of every shard through a packed temporary of at most
// chunk_limit elements, one round after another.
#include <cstdint>
#include <cstring>

#include "comm/mpi_internal.hpp"
#include "core/error.hpp"

namespace wiola::comm {

namespace {

using Impl = MpiCommunicator::Impl;

std::string describe(const char* call, std::size_t count, DType t) {
  return std::string(call) + " of " + std::to_string(count) + " " + std::string(dtype_name(t));
}

bool overlaps(const void* a, std::size_t na, const void* b, std::size_t nb) {
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return na > 0 && nb > 0 && pa < pb + nb && pb < pa + na;
}

// Shard geometry of an uneven reduce-scatter / allgather, and its rounds.
struct ShardPlan {
  std::vector<std::size_t> counts, offsets;
  std::size_t total = 0;
  std::size_t round_len = 0;  // elements of each shard per round
  int rounds = 1;

  ShardPlan(const Impl& c, std::span<const std::size_t> cnt, const char* what) {
    require(static_cast<int>(cnt.size()) == c.size, "comm '", c.name, "': ", what, " got ",
            cnt.size(), " counts for ", c.size, " ranks");
    counts.assign(cnt.begin(), cnt.end());
    std::size_t biggest = 0;
    for (std::size_t n : counts) {
      offsets.push_back(total);
      total += n;
      biggest = std::max(biggest, n);
    }
    if (total <= c.chunk_limit) {
      round_len = biggest;
      return;
    }
    round_len = std::max<std::size_t>(1, c.chunk_limit / static_cast<std::size_t>(c.size));
    rounds = static_cast<int>((biggest + round_len - 1) / round_len);
  }
  std::size_t count_in(int r, int round) const {
    const std::size_t lo = static_cast<std::size_t>(round) * round_len;
    return counts[r] > lo ? std::min(round_len, counts[r] - lo) : 0;
  }
  std::vector<int> int_counts(int round) const {
    std::vector<int> v(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r)
      v[r] = static_cast<int>(count_in(static_cast<int>(r), round));
    return v;
  }
  static std::vector<int> displs(const std::vector<int>& c) {
    std::vector<int> d(c.size(), 0);
    for (std::size_t r = 1; r < c.size(); ++r) d[r] = d[r - 1] + c[r - 1];
    return d;
  }
};

}  // namespace

std::unique_ptr<Request> MpiCommunicator::post_allreduce(Buffer buf, std::size_t count, DType t,
                                                         ReduceOp op) {
  const MPI_Datatype type = detail::mpi_reduce_type(t);
  auto req = std::make_unique<MpiRequest>(
      impl_, describe("MPI_Iallreduce", count, t) + " (" + std::string(reduce_op_name(op)) + ")");
  auto* p = static_cast<std::byte*>(buf.data);
  const std::size_t es = dtype_size(t);
  // Pieces are independent; all are in flight at once.
  detail::for_each_piece(count, impl_->chunk_limit, [&](std::size_t off, int n) {
    MPI_Request r = MPI_REQUEST_NULL;
    impl_->check(
        MPI_Iallreduce(MPI_IN_PLACE, p + off * es, n, type, detail::mpi_op(op), impl_->comm, &r),
        req->what());
    req->add(r);
  });
  return req;
}

std::unique_ptr<Request> MpiCommunicator::post_reduce_scatter(ConstBuffer send, Buffer recv,
                                                              std::span<const std::size_t> counts,
                                                              DType t, ReduceOp op) {
  const MPI_Datatype type = detail::mpi_reduce_type(t);
  auto plan = std::make_shared<ShardPlan>(*impl_, counts, "reduce_scatter");
  const int me = impl_->rank;
  const std::size_t es = dtype_size(t);
  auto* src = static_cast<std::byte*>(const_cast<void*>(send.data));  // written only in place
  auto* dst = static_cast<std::byte*>(recv.data);
  const bool in_place = dst == src + plan->offsets[me] * es;
  require(in_place || !overlaps(src, plan->total * es, dst, plan->counts[me] * es), "comm '",
          impl_->name,
          "': reduce_scatter buffers overlap (only recv == send + own offset is "
          "allowed)");
  auto req = std::make_unique<MpiRequest>(impl_, describe("MPI_Ireduce_scatter", plan->total, t) +
                                                     " (" + std::string(reduce_op_name(op)) + ")");
  auto c = impl_;
  const MPI_Op mop = detail::mpi_op(op);

  if (plan->rounds == 1) {
    auto icounts = std::make_shared<std::vector<int>>(plan->int_counts(0));
    MPI_Request r = MPI_REQUEST_NULL;
    if (in_place) {
      // MPI_IN_PLACE takes the input from recvbuf (the whole buffer) and leaves
      // this rank's result at its start; move it to the rank's own offset.
      c->check(MPI_Ireduce_scatter(MPI_IN_PLACE, src, icounts->data(), type, mop, c->comm, &r),
               req->what());
      req->add(r);
      req->then([plan, icounts, src, dst, es, me](MpiRequest&) {
        std::memmove(dst, src, plan->counts[me] * es);
        return false;
      });
    } else {
      c->check(MPI_Ireduce_scatter(src, dst, icounts->data(), type, mop, c->comm, &r), req->what());
      req->add(r);
      req->then([icounts](MpiRequest&) { return false; });  // keeps the counts alive
    }
    return req;
  }

  struct State {
    int round = 0;
    std::vector<int> icounts;
    std::vector<std::byte> packed;
  };
  auto st = std::make_shared<State>();
  st->packed.resize(static_cast<std::size_t>(impl_->size) * plan->round_len * es);
  // Packs round j of every shard and posts it; the result goes straight to
  // this rank's recv (in place, that region was packed before it is written).
  auto post = [plan, st, c, src, dst, es, type, mop](MpiRequest& rq) {
    const int j = st->round;
    st->icounts = plan->int_counts(j);
    std::size_t pos = 0;
    for (int r = 0; r < c->size; ++r) {
      const std::size_t n = plan->count_in(r, j);
      std::memcpy(st->packed.data() + pos * es,
                  src + (plan->offsets[r] + std::size_t(j) * plan->round_len) * es, n * es);
      pos += n;
    }
    MPI_Request q = MPI_REQUEST_NULL;
    c->check(MPI_Ireduce_scatter(st->packed.data(), dst + std::size_t(j) * plan->round_len * es,
                                 st->icounts.data(), type, mop, c->comm, &q),
             rq.what() + " round " + std::to_string(j));
    rq.add(q);
  };
  post(*req);
  req->then([plan, st, post](MpiRequest& rq) {
    if (++st->round >= plan->rounds) return false;
    post(rq);
    return true;
  });
  return req;
}

std::unique_ptr<Request> MpiCommunicator::post_allgather(ConstBuffer send, Buffer recv,
                                                         std::span<const std::size_t> counts,
                                                         DType t) {
  const MPI_Datatype type = detail::mpi_type(t);
  auto plan = std::make_shared<ShardPlan>(*impl_, counts, "allgather");
  const int me = impl_->rank;
  const std::size_t es = dtype_size(t);
  const auto* src = static_cast<const std::byte*>(send.data);
  auto* dst = static_cast<std::byte*>(recv.data);
  const bool in_place = src == dst + plan->offsets[me] * es;
  require(in_place || !overlaps(src, plan->counts[me] * es, dst, plan->total * es), "comm '",
          impl_->name, "': allgather buffers overlap (only send == recv + own offset is allowed)");
  auto req = std::make_unique<MpiRequest>(impl_, describe("MPI_Iallgatherv", plan->total, t));
  auto c = impl_;

  if (plan->rounds == 1) {
    auto icounts = std::make_shared<std::vector<int>>(plan->int_counts(0));
    auto displs = std::make_shared<std::vector<int>>(ShardPlan::displs(*icounts));
    MPI_Request r = MPI_REQUEST_NULL;
    c->check(MPI_Iallgatherv(in_place ? MPI_IN_PLACE : src, (*icounts)[me], type, dst,
                             icounts->data(), displs->data(), type, c->comm, &r),
             req->what());
    req->add(r);
    req->then([icounts, displs](MpiRequest&) { return false; });  // keeps the arrays alive
    return req;
  }

  struct State {
    int round = 0;
    std::vector<int> icounts, displs;
    std::vector<std::byte> packed;
  };
  auto st = std::make_shared<State>();
  st->packed.resize(static_cast<std::size_t>(impl_->size) * plan->round_len * es);
  auto post = [plan, st, c, src, es, me, type](MpiRequest& rq) {
    const int j = st->round;
    st->icounts = plan->int_counts(j);
    st->displs = ShardPlan::displs(st->icounts);
    MPI_Request q = MPI_REQUEST_NULL;
    c->check(MPI_Iallgatherv(src + std::size_t(j) * plan->round_len * es, st->icounts[me], type,
                             st->packed.data(), st->icounts.data(), st->displs.data(), type,
                             c->comm, &q),
             rq.what() + " round " + std::to_string(j));
    rq.add(q);
  };
  post(*req);
  req->then([plan, st, post, dst, es](MpiRequest& rq) {
    const int j = st->round;
    for (std::size_t r = 0; r < plan->counts.size(); ++r)
      std::memcpy(dst + (plan->offsets[r] + std::size_t(j) * plan->round_len) * es,
                  st->packed.data() + std::size_t(st->displs[r]) * es,
                  std::size_t(st->icounts[r]) * es);
    if (++st->round >= plan->rounds) return false;
    post(rq);
    return true;
  });
  return req;
}

std::unique_ptr<Request> MpiCommunicator::post_broadcast(Buffer buf, std::size_t bytes, int root) {
  require(root >= 0 && root < impl_->size, "comm '", impl_->name, "': broadcast root ", root,
          " is out of range (size ", impl_->size, ")");
  auto req = std::make_unique<MpiRequest>(
      impl_, "MPI_Ibcast of " + std::to_string(bytes) + " bytes from " + impl_->peer(root));
  auto* p = static_cast<std::byte*>(buf.data);
  detail::for_each_piece(bytes, impl_->chunk_limit, [&](std::size_t off, int n) {
    MPI_Request r = MPI_REQUEST_NULL;
    impl_->check(MPI_Ibcast(p + off, n, MPI_BYTE, root, impl_->comm, &r), req->what());
    req->add(r);
  });
  return req;
}

std::unique_ptr<Request> MpiCommunicator::post_barrier() {
  auto req = std::make_unique<MpiRequest>(impl_, "MPI_Ibarrier");
  MPI_Request r = MPI_REQUEST_NULL;
  impl_->check(MPI_Ibarrier(impl_->comm, &r), req->what());
  req->add(r);
  return req;
}

}  // namespace wiola::comm
