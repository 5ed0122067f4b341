// NcclCommunicator: set-up over the host sibling, the operations on the
// communication streams, and teardown. The watchdog thread and the fatal
// path are in nccl_service.cpp; the grid factory in nccl_device_groups.cpp.
#include "comm/nccl_communicator.hpp"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>

#include "comm/mpi_communicator.hpp"
#include "comm/mpi_internal.hpp"  // detail::identity, detail::die
#include "comm/nccl_internal.hpp"
#include "comm/shard_layout.hpp"
#include "comm/unique_id.hpp"
#include "core/error.hpp"

namespace wiola::comm {

using nccl::HostScope;
using nccl::OpEvents;
using nccl::Service;

namespace {

// One direction between two neighbours: a two-rank NCCL communicator in
// which the sender is rank 0 and the receiver rank 1, on its own stream.
struct Channel {
  int peer = -1;
  bool sending = false;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t ready = nullptr;
};

std::string describe(const char* call, std::size_t count, DType t) {
  return std::string(call) + " of " + std::to_string(count) + " " + std::string(dtype_name(t));
}

bool overlaps(const void* a, std::size_t na, const void* b, std::size_t nb) {
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return na > 0 && nb > 0 && pa < pb + nb && pb < pa + na;
}

bool on_host(Device d) { return d == Device::CPU; }

// A device operation. wait() orders the compute stream after it; the host
// does not block.
class NcclRequest final : public Request {
 public:
  NcclRequest(std::shared_ptr<Service> svc, OpWatchdog::OpId op, std::shared_ptr<OpEvents> ev,
              cudaStream_t compute, std::string what)
      : svc_(std::move(svc)), op_(op), ev_(std::move(ev)), compute_(compute),
        what_(std::move(what)) {}
  ~NcclRequest() override {
    if (!done_) wait();
  }
  NcclRequest(const NcclRequest&) = delete;
  NcclRequest& operator=(const NcclRequest&) = delete;

  void wait() override {
    Service::park_if_ending();
    if (done_ || test()) return;
    done_ = true;
    // `reached` completes when the compute stream gets to this wait: from
    // then on the watchdog times the operation.
    cudaEvent_t reached = nullptr;
    check(cudaEventCreateWithFlags(&reached, cudaEventDisableTiming), "cudaEventCreate");
    ev_->reached.store(reached);
    check(cudaEventRecord(reached, compute_), "cudaEventRecord");
    check(cudaStreamWaitEvent(compute_, ev_->done, 0), "cudaStreamWaitEvent");
    svc_->watchdog().waited(op_);
  }

  bool test() override {
    Service::park_if_ending();
    if (done_) return true;
    const cudaError_t rc = cudaEventQuery(ev_->done);
    if (rc == cudaErrorNotReady) return false;
    if (rc != cudaSuccess) svc_->fatal(what_ + " failed: " + nccl::cuda_error_text(rc),
                                       kAbortNcclError);
    done_ = true;
    return true;
  }

 private:
  void check(cudaError_t rc, const char* call) {
    if (rc != cudaSuccess)
      svc_->fatal(std::string(call) + " waiting for " + what_ + " failed: " +
                      nccl::cuda_error_text(rc),
                  kAbortNcclError);
  }
  std::shared_ptr<Service> svc_;
  OpWatchdog::OpId op_;
  std::shared_ptr<OpEvents> ev_;
  cudaStream_t compute_;
  std::string what_;  // "ncclAllReduce of 4 fp32 (sum) on 'data'"
  bool done_ = false;
};

}  // namespace

struct NcclCommunicator::Impl {
  std::shared_ptr<Service> svc;
  std::unique_ptr<Communicator> host;
  std::string name;
  int rank = 0, size = 0;
  std::vector<int> world_ranks;
  NcclOptions options;
  OpWatchdog::CommId id = -1;
  double timeout = 0;
  cudaStream_t compute = nullptr;
  ncclComm_t comm = nullptr;  // the group's
  cudaStream_t stream = nullptr;
  cudaEvent_t ready = nullptr;
  std::vector<Channel> channels;

  // "rank 2", or "rank 2 (world 5)" when the ranks differ.
  std::string peer(int r) const {
    std::string s = "rank " + std::to_string(r);
    if (r >= 0 && r < size && world_ranks[r] != r)
      s += " (world " + std::to_string(world_ranks[r]) + ")";
    return s;
  }
  void check_cuda(cudaError_t rc, const std::string& what) const {
    if (rc != cudaSuccess)
      svc->fatal(what + " on '" + name + "' failed: " + nccl::cuda_error_text(rc),
                 kAbortNcclError);
  }
  void check_nccl(ncclResult_t rc, ncclComm_t c, const std::string& what) const {
    if (rc != ncclSuccess && rc != ncclInProgress)
      svc->fatal(what + " on '" + name + "' failed: " + nccl::nccl_error_text(rc, c),
                 kAbortNcclError);
  }
  Channel* channel(int peer_rank, bool sending) {
    for (Channel& c : channels)
      if (c.peer == peer_rank && c.sending == sending) return &c;
    return nullptr;
  }
  void check_peer(int p, int tag, const char* role) const {
    require(p >= 0 && p < size, "comm '", name, "': ", role, " rank ", p,
            " is out of range (size ", size, ")");
    require(tag >= 0 && tag <= host->max_tag(), "comm '", name, "': tag ", tag,
            " is out of range [0, ", host->max_tag(), "]");
  }

  // Orders `s` after the compute stream as it is now, runs `calls` (the NCCL
  // calls, on `s`), records the completion event and tracks the operation.
  std::unique_ptr<Request> issue(cudaStream_t s, cudaEvent_t ready_event, const std::string& what,
                                 const std::function<void()>& calls) {
    check_cuda(cudaEventRecord(ready_event, compute), "cudaEventRecord (compute) for " + what);
    check_cuda(cudaStreamWaitEvent(s, ready_event, 0), "cudaStreamWaitEvent for " + what);
    calls();
    auto ev = std::make_shared<OpEvents>();
    check_cuda(cudaEventCreateWithFlags(&ev->done, cudaEventDisableTiming),
               "cudaEventCreate for " + what);
    check_cuda(cudaEventRecord(ev->done, s), "cudaEventRecord for " + what);
    const OpWatchdog::OpId op = svc->track(id, what, ev);
    return std::make_unique<NcclRequest>(svc, op, std::move(ev), compute,
                                         what + " on '" + name + "'");
  }
  std::unique_ptr<Request> collective(const std::string& what, const std::function<void()>& calls) {
    return issue(stream, ready, what, calls);
  }
};

namespace {

// Communication streams get the device's highest priority, so their small
// kernels are scheduled ahead of compute kernels waiting for SMs.
cudaStream_t make_stream(const NcclCommunicator::Impl& m) {
  int least = 0, greatest = 0;
  m.check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest),
               "cudaDeviceGetStreamPriorityRange");
  cudaStream_t s = nullptr;
  m.check_cuda(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest),
               "cudaStreamCreateWithPriority");
  return s;
}

cudaEvent_t make_event(const NcclCommunicator::Impl& m) {
  cudaEvent_t e = nullptr;
  m.check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  return e;
}

static_assert(sizeof(ncclUniqueId) == kNcclUniqueIdBytes);

ncclUniqueId id_at(const std::vector<std::byte>& ids, std::size_t i) {
  ncclUniqueId u;
  std::memcpy(&u, ids.data() + i * sizeof u, sizeof u);
  return u;
}

// Polls until `streams` are idle (under a HostScope, so the watchdog times it).
void drain(const std::vector<cudaStream_t>& streams) {
  for (cudaStream_t s : streams)
    while (cudaStreamQuery(s) == cudaErrorNotReady)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
}

// NCCL connects a pair for point to point at its first message, and the
// host blocks there until the peer sends or receives its first one too. Left
// to the first real messages, that would be a blocking rendezvous in an order
// the schedule never promised; so every channel carries one byte now, all in
// one NCCL group (every member of the group does the same at set-up).
void connect_channels(NcclCommunicator::Impl& m) {
  HostScope scope(*m.svc, m.id, "connecting " + std::to_string(m.channels.size()) +
                                    " neighbour channels");
  void* scratch = nullptr;
  m.check_cuda(cudaMalloc(&scratch, m.channels.size()), "cudaMalloc (channel set-up)");
  m.check_nccl(ncclGroupStart(), nullptr, "ncclGroupStart");
  for (std::size_t i = 0; i < m.channels.size(); ++i) {
    const Channel& c = m.channels[i];
    void* byte = static_cast<std::byte*>(scratch) + i;
    const std::string what = "the first message with " + m.peer(c.peer);
    if (c.sending)
      m.check_nccl(ncclSend(byte, 1, ncclUint8, 1, c.comm, c.stream), c.comm, what);
    else
      m.check_nccl(ncclRecv(byte, 1, ncclUint8, 0, c.comm, c.stream), c.comm, what);
  }
  m.check_nccl(ncclGroupEnd(), nullptr, "the first messages of the neighbour channels");
  std::vector<cudaStream_t> streams;
  for (const Channel& c : m.channels) streams.push_back(c.stream);
  drain(streams);
  m.check_cuda(cudaFree(scratch), "cudaFree (channel set-up)");
}

}  // namespace

NcclCommunicator::NcclCommunicator(std::unique_ptr<Communicator> host, const NcclOptions& options)
    : impl_(std::make_unique<Impl>()) {
  require(host != nullptr, "NcclCommunicator: no host communicator");
  Impl& m = *impl_;
  m.host = std::move(host);
  m.name = m.host->name();
  m.rank = m.host->rank();
  m.size = m.host->size();
  m.options = options;
  m.compute = static_cast<cudaStream_t>(options.compute_stream);
  Communicator::set_device_staging(m.host->device_staging());  // split() hands it on

  std::int32_t me = detail::identity().world_rank;
  std::vector<std::int32_t> world(static_cast<std::size_t>(m.size));
  m.host->allgather(&me, world.data(), std::vector<std::size_t>(world.size(), 1), DType::I32);
  m.world_ranks.assign(world.begin(), world.end());

  int device = -1;
  if (const cudaError_t rc = cudaGetDevice(&device); rc != cudaSuccess)
    detail::die("NCCL communicator '" + m.name + "': no CUDA device: " +
                    nccl::cuda_error_text(rc),
                kAbortNcclError);
  m.svc = Service::acquire(device);
  auto* host_mpi = dynamic_cast<MpiCommunicator*>(m.host.get());
  if (options.timeout) {
    require(*options.timeout >= 0, "comm '", m.name, "': timeout must be >= 0 s, got ",
            *options.timeout);
    m.timeout = *options.timeout;
    if (host_mpi) host_mpi->set_timeout(m.timeout);
  } else if (host_mpi) {
    m.timeout = host_mpi->timeout();
  }
  m.id = m.svc->watchdog().add_comm(m.name, m.timeout);
  m.stream = make_stream(m);
  m.ready = make_event(m);

  // Ids: [0] the group's; with channels, [1 + a] for a -> a+1 and
  // [size + a] for a+1 -> a (a in [0, size - 1)).
  const bool with_channels = options.neighbour_channels && m.size > 1;
  const std::size_t n_ids = 1 + (with_channels ? 2 * std::size_t(m.size - 1) : 0);
  std::vector<std::size_t> channel_id;
  if (with_channels) {
    for (int p : {m.rank - 1, m.rank + 1}) {
      if (p < 0 || p >= m.size) continue;
      const int lo = std::min(m.rank, p);
      const bool up_send = p == m.rank + 1;  // this rank -> rank + 1
      Channel send{p, true, nullptr, make_stream(m), make_event(m)};
      Channel recv{p, false, nullptr, make_stream(m), make_event(m)};
      m.channels.push_back(send);
      channel_id.push_back(up_send ? 1 + std::size_t(lo) : std::size_t(m.size) + std::size_t(lo));
      m.channels.push_back(recv);
      channel_id.push_back(up_send ? std::size_t(m.size) + std::size_t(lo) : 1 + std::size_t(lo));
    }
  }
  const std::vector<std::byte> ids =
      exchange_unique_ids(*m.host, n_ids, kNcclUniqueIdBytes, make_nccl_unique_id);
  {
    // Blocking until every member joins: under the watchdog.
    HostScope scope(*m.svc, m.id,
                    "ncclCommInitRank of " + std::to_string(m.size) + " ranks" +
                        (with_channels ? " and " + std::to_string(m.channels.size()) +
                                             " neighbour channels"
                                       : ""));
    // One group: a rank joins its group's and its channels' communicators
    // together, whatever order its neighbours reach theirs in.
    m.check_nccl(ncclGroupStart(), nullptr, "ncclGroupStart");
    m.check_nccl(ncclCommInitRank(&m.comm, m.size, id_at(ids, 0), m.rank), nullptr,
                 "ncclCommInitRank");
    for (std::size_t i = 0; i < m.channels.size(); ++i) {
      Channel& c = m.channels[i];
      m.check_nccl(ncclCommInitRank(&c.comm, 2, id_at(ids, channel_id[i]), c.sending ? 0 : 1),
                   nullptr, "ncclCommInitRank (channel with " + m.peer(c.peer) + ")");
    }
    m.check_nccl(ncclGroupEnd(), m.comm, "ncclCommInitRank (group end)");
  }
  m.svc->attach(m.id, m.comm);
  for (const Channel& c : m.channels) m.svc->attach(m.id, c.comm);
  if (!m.channels.empty()) connect_channels(m);
}

NcclCommunicator::~NcclCommunicator() {
  Impl& m = *impl_;
  {
    // Every operation issued here is complete before its buffers' owner
    // could free them (requests wait on destruction), so this only waits for
    // the device to get there; polled, so the watchdog can time it.
    HostScope scope(*m.svc, m.id, "draining the communication streams");
    std::vector<cudaStream_t> streams{m.stream};
    for (const Channel& c : m.channels) streams.push_back(c.stream);
    drain(streams);
  }
  m.svc->detach(m.id);
  {
    HostScope scope(*m.svc, m.id, "ncclCommDestroy");
    // Teardown: an error here has nothing left to protect; it is ignored.
    for (const Channel& c : m.channels) ncclCommDestroy(c.comm);
    ncclCommDestroy(m.comm);
  }
  for (const Channel& c : m.channels) {
    cudaEventDestroy(c.ready);
    cudaStreamDestroy(c.stream);
  }
  cudaEventDestroy(m.ready);
  cudaStreamDestroy(m.stream);
  m.svc->watchdog().remove_comm(m.id);
}

int NcclCommunicator::rank() const { return impl_->rank; }
int NcclCommunicator::size() const { return impl_->size; }
const std::string& NcclCommunicator::name() const { return impl_->name; }
int NcclCommunicator::max_tag() const { return impl_->host->max_tag(); }
Communicator& NcclCommunicator::host() { return *impl_->host; }

void NcclCommunicator::set_device_staging(std::shared_ptr<DeviceStaging> staging) {
  impl_->host->set_device_staging(staging);
  Communicator::set_device_staging(std::move(staging));
}

void NcclCommunicator::abort(const std::string& why, int code) { impl_->svc->fatal(why, code); }

void NcclCommunicator::set_timeout(double seconds) {
  require(seconds >= 0, "comm '", impl_->name, "': timeout must be >= 0 s, got ", seconds);
  impl_->timeout = seconds;
  impl_->svc->watchdog().set_timeout(impl_->id, seconds);
  if (auto* mpi = dynamic_cast<MpiCommunicator*>(impl_->host.get())) mpi->set_timeout(seconds);
}

double NcclCommunicator::timeout() const { return impl_->timeout; }

void NcclCommunicator::set_compute_stream(void* stream) {
  impl_->compute = static_cast<cudaStream_t>(stream);
}

// ---- point to point -----------------------------------------------------------------

std::unique_ptr<Request> NcclCommunicator::post_send(ConstBuffer buf, std::size_t bytes, int dst,
                                                     int tag) {
  Service::park_if_ending();
  Impl& m = *impl_;
  m.check_peer(dst, tag, "destination");
  Channel* ch = on_host(buf.memory) ? nullptr : m.channel(dst, true);
  if (!ch) return m.host->isend(buf, bytes, dst, tag);  // host memory, or no channel: staged
  const std::string what = "ncclSend to " + m.peer(dst) + " tag " + std::to_string(tag) + " (" +
                           std::to_string(bytes) + " bytes)";
  return m.issue(ch->stream, ch->ready, what, [&] {
    m.check_nccl(ncclSend(buf.data, bytes, ncclUint8, /*peer=*/1, ch->comm, ch->stream), ch->comm,
                 what);
  });
}

std::unique_ptr<Request> NcclCommunicator::post_recv(Buffer buf, std::size_t bytes, int src,
                                                     int tag) {
  Service::park_if_ending();
  Impl& m = *impl_;
  m.check_peer(src, tag, "source");
  Channel* ch = on_host(buf.memory) ? nullptr : m.channel(src, false);
  if (!ch) return m.host->irecv(buf, bytes, src, tag);
  const std::string what = "ncclRecv from " + m.peer(src) + " tag " + std::to_string(tag) + " (" +
                           std::to_string(bytes) + " bytes)";
  return m.issue(ch->stream, ch->ready, what, [&] {
    m.check_nccl(ncclRecv(buf.data, bytes, ncclUint8, /*peer=*/0, ch->comm, ch->stream), ch->comm,
                 what);
  });
}

// ---- collectives ------------------------------------------------------------------

std::unique_ptr<Request> NcclCommunicator::post_allreduce(Buffer buf, std::size_t count, DType t,
                                                          ReduceOp op) {
  Service::park_if_ending();
  Impl& m = *impl_;
  if (on_host(buf.memory)) return m.host->iallreduce(buf, count, t, op);
  const ncclDataType_t type = nccl::reduce_type(t);
  const std::string what =
      describe("ncclAllReduce", count, t) + " (" + std::string(reduce_op_name(op)) + ")";
  return m.collective(what, [&] {
    if (count == 0) return;
    m.check_nccl(ncclAllReduce(buf.data, buf.data, count, type, nccl::reduce_op(op), m.comm,
                               m.stream),
                 m.comm, what);
  });
}

std::unique_ptr<Request> NcclCommunicator::post_reduce_scatter(ConstBuffer send, Buffer recv,
                                                               std::span<const std::size_t> counts,
                                                               DType t, ReduceOp op) {
  Service::park_if_ending();
  Impl& m = *impl_;
  if (on_host(send.memory) || on_host(recv.memory))
    return m.host->ireduce_scatter(send, recv, counts, t, op);
  require(static_cast<int>(counts.size()) == m.size, "comm '", m.name, "': reduce_scatter got ",
          counts.size(), " counts for ", m.size, " ranks");
  const ncclDataType_t type = nccl::reduce_type(t);
  const ShardLayout L(counts);
  const std::size_t es = dtype_size(t);
  const auto* src = static_cast<const std::byte*>(send.data);
  auto* dst = static_cast<std::byte*>(recv.data);
  const std::size_t me = static_cast<std::size_t>(m.rank);
  const bool in_place = dst == src + L.offsets[me] * es;
  require(in_place || !overlaps(src, L.total * es, dst, L.counts[me] * es), "comm '", m.name,
          "': reduce_scatter buffers overlap (only recv == send + own offset is allowed)");
  const ncclRedOp_t rop = nccl::reduce_op(op);
  const std::string sum = " (" + std::string(reduce_op_name(op)) + ")";
  if (L.even)
    return m.collective(describe("ncclReduceScatter", L.total, t) + sum, [&] {
      if (L.total == 0) return;
      m.check_nccl(ncclReduceScatter(src, dst, L.counts[0], type, rop, m.comm, m.stream), m.comm,
                   "ncclReduceScatter");
    });
  const std::vector<int> roots = L.roots();
  const std::string what = describe("uneven ncclReduceScatter", L.total, t) + sum + " as " +
                           std::to_string(roots.size()) + " grouped ncclReduce";
  return m.collective(what, [&] {
    if (roots.empty()) return;
    m.check_nccl(ncclGroupStart(), m.comm, what);
    for (int r : roots) {
      const std::byte* part = src + L.offsets[r] * es;
      // Only the root writes; the others pass their own part (never written).
      void* out = r == m.rank ? static_cast<void*>(dst) : const_cast<std::byte*>(part);
      m.check_nccl(ncclReduce(part, out, L.counts[r], type, rop, r, m.comm, m.stream), m.comm,
                   what);
    }
    m.check_nccl(ncclGroupEnd(), m.comm, what);
  });
}

std::unique_ptr<Request> NcclCommunicator::post_allgather(ConstBuffer send, Buffer recv,
                                                          std::span<const std::size_t> counts,
                                                          DType t) {
  Service::park_if_ending();
  Impl& m = *impl_;
  if (on_host(send.memory) || on_host(recv.memory))
    return m.host->iallgather(send, recv, counts, t);
  require(static_cast<int>(counts.size()) == m.size, "comm '", m.name, "': allgather got ",
          counts.size(), " counts for ", m.size, " ranks");
  const ShardLayout L(counts);
  const std::size_t es = dtype_size(t);
  const auto* src = static_cast<const std::byte*>(send.data);
  auto* dst = static_cast<std::byte*>(recv.data);
  const std::size_t me = static_cast<std::size_t>(m.rank);
  const bool in_place = src == dst + L.offsets[me] * es;
  require(in_place || !overlaps(src, L.counts[me] * es, dst, L.total * es), "comm '", m.name,
          "': allgather buffers overlap (only send == recv + own offset is allowed)");
  // Any dtype: moved as bytes.
  if (L.even)
    return m.collective(describe("ncclAllGather", L.total, t), [&] {
      if (L.total == 0) return;
      m.check_nccl(ncclAllGather(src, dst, L.counts[0] * es, ncclUint8, m.comm, m.stream), m.comm,
                   "ncclAllGather");
    });
  const std::vector<int> roots = L.roots();
  const std::string what = describe("uneven ncclAllGather", L.total, t) + " as " +
                           std::to_string(roots.size()) + " grouped ncclBroadcast";
  return m.collective(what, [&] {
    if (roots.empty()) return;
    m.check_nccl(ncclGroupStart(), m.comm, what);
    for (int r : roots) {
      std::byte* part = dst + L.offsets[r] * es;
      const void* in = r == m.rank ? static_cast<const void*>(src) : part;
      m.check_nccl(ncclBroadcast(in, part, L.counts[r] * es, ncclUint8, r, m.comm, m.stream),
                   m.comm, what);
    }
    m.check_nccl(ncclGroupEnd(), m.comm, what);
  });
}

std::unique_ptr<Request> NcclCommunicator::post_broadcast(Buffer buf, std::size_t bytes, int root) {
  Service::park_if_ending();
  Impl& m = *impl_;
  require(root >= 0 && root < m.size, "comm '", m.name, "': broadcast root ", root,
          " is out of range (size ", m.size, ")");
  if (on_host(buf.memory)) return m.host->ibroadcast(buf, bytes, root);
  const std::string what =
      "ncclBroadcast of " + std::to_string(bytes) + " bytes from " + m.peer(root);
  return m.collective(what, [&] {
    if (bytes == 0) return;
    m.check_nccl(ncclBroadcast(buf.data, buf.data, bytes, ncclUint8, root, m.comm, m.stream),
                 m.comm, what);
  });
}

std::unique_ptr<Request> NcclCommunicator::post_barrier() {
  Service::park_if_ending();
  return impl_->host->ibarrier();
}

std::unique_ptr<Communicator> NcclCommunicator::make_split(int color, int key,
                                                           std::string new_name) {
  Impl& m = *impl_;
  std::unique_ptr<Communicator> h = m.host->split(color, key, std::move(new_name));
  if (!h) return nullptr;
  // The same decision as for the grid's groups, made alike by every member.
  const std::vector<DeviceIdentity> ids = gather_identities(*h, current_device_identity());
  if (choose_transport(ids).transport == Transport::Mpi) return h;
  NcclOptions o = m.options;
  o.compute_stream = m.compute;
  o.timeout = m.timeout;
  return std::make_unique<NcclCommunicator>(std::move(h), o);
}

}  // namespace wiola::comm
