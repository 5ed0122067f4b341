// Communicator: argument checks shared by every transport, the tensor forms,
// and staging of device buffers through host memory for transports that only
// read host memory.
#include "comm/communicator.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

#include "core/error.hpp"

namespace wiola::comm {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

namespace {

using HostBytes = std::vector<std::byte>;

// A request on host copies of device buffers: when the transport is done, the
// copy-back (for buffers the operation writes) runs once, then the copies go.
class StagedRequest final : public Request {
 public:
  StagedRequest(std::unique_ptr<Request> inner, std::vector<std::shared_ptr<HostBytes>> keep,
                std::function<void()> copy_back)
      : inner_(std::move(inner)), keep_(std::move(keep)), copy_back_(std::move(copy_back)) {}
  ~StagedRequest() override {
    if (!done_) wait();
  }
  void wait() override {
    if (done_) return;
    inner_->wait();
    finish();
  }
  bool test() override {
    if (done_) return true;
    if (!inner_->test()) return false;
    finish();
    return true;
  }

 private:
  void finish() {
    done_ = true;
    if (copy_back_) copy_back_();
    keep_.clear();
  }
  std::unique_ptr<Request> inner_;
  std::vector<std::shared_ptr<HostBytes>> keep_;
  std::function<void()> copy_back_;
  bool done_ = false;
};

ConstBuffer const_view(const Tensor& t, const char* what) {
  require(t.contiguous(), what, ": the tensor must be contiguous");
  return {t.data(), t.device()};
}
Buffer view(const Tensor& t, const char* what) {
  require(t.contiguous(), what, ": the tensor must be contiguous");
  return {t.data(), t.device()};
}

std::size_t total_of(std::span<const std::size_t> counts) {
  return std::accumulate(counts.begin(), counts.end(), std::size_t{0});
}

}  // namespace

bool Communicator::staged(Device memory) const {
  return memory != Device::CPU && !reads_device_memory();
}

DeviceStaging& Communicator::staging() const {
  require(staging_ != nullptr, "comm '", name(),
          "': a device buffer was given to a transport that reads only host memory, and no "
          "device staging is set up");
  return *staging_;
}

std::unique_ptr<Request> Communicator::isend(ConstBuffer buf, std::size_t bytes, int dst,
                                             int tag) {
  if (!staged(buf.memory)) return post_send(buf, bytes, dst, tag);
  auto host = std::make_shared<HostBytes>(bytes);
  staging().to_host(buf.data, host->data(), bytes);
  return std::make_unique<StagedRequest>(post_send({host->data()}, bytes, dst, tag),
                                         std::vector{host}, nullptr);
}

std::unique_ptr<Request> Communicator::irecv(Buffer buf, std::size_t bytes, int src, int tag) {
  if (!staged(buf.memory)) return post_recv(buf, bytes, src, tag);
  auto host = std::make_shared<HostBytes>(bytes);
  DeviceStaging& st = staging();
  return std::make_unique<StagedRequest>(
      post_recv({host->data()}, bytes, src, tag), std::vector{host},
      [&st, host, buf, bytes] { st.to_device(host->data(), buf.data, bytes); });
}

std::unique_ptr<Request> Communicator::isend(const Tensor& t, int dst, int tag) {
  return isend(const_view(t, "isend"), t.bytes(), dst, tag);
}

std::unique_ptr<Request> Communicator::irecv(const Tensor& t, int src, int tag) {
  return irecv(view(t, "irecv"), t.bytes(), src, tag);
}

std::unique_ptr<Request> Communicator::iallreduce(Buffer buf, std::size_t count, DType t,
                                                  ReduceOp op) {
  if (!staged(buf.memory)) return post_allreduce(buf, count, t, op);
  const std::size_t bytes = count * dtype_size(t);
  auto host = std::make_shared<HostBytes>(bytes);
  DeviceStaging& st = staging();
  st.to_host(buf.data, host->data(), bytes);
  return std::make_unique<StagedRequest>(
      post_allreduce({host->data()}, count, t, op), std::vector{host},
      [&st, host, buf, bytes] { st.to_device(host->data(), buf.data, bytes); });
}

std::unique_ptr<Request> Communicator::ireduce_scatter(ConstBuffer send, Buffer recv,
                                                       std::span<const std::size_t> counts,
                                                       DType t, ReduceOp op) {
  require(static_cast<int>(counts.size()) == size(), "comm '", name(), "': reduce_scatter got ",
          counts.size(), " counts for ", size(), " ranks");
  if (!staged(send.memory) && !staged(recv.memory))
    return post_reduce_scatter(send, recv, counts, t, op);
  // Host copies of both sides; never in place (the copies are distinct).
  const std::size_t es = dtype_size(t);
  const std::size_t send_bytes = total_of(counts) * es;
  const std::size_t recv_bytes = counts[static_cast<std::size_t>(rank())] * es;
  DeviceStaging& st = staging();
  auto host_send = std::make_shared<HostBytes>(send_bytes);
  auto host_recv = std::make_shared<HostBytes>(recv_bytes);
  if (staged(send.memory))
    st.to_host(send.data, host_send->data(), send_bytes);
  else
    std::copy_n(static_cast<const std::byte*>(send.data), send_bytes, host_send->data());
  auto inner = post_reduce_scatter({host_send->data()}, {host_recv->data()}, counts, t, op);
  const bool device_recv = staged(recv.memory);
  return std::make_unique<StagedRequest>(
      std::move(inner), std::vector{host_send, host_recv},
      [&st, host_recv, recv, recv_bytes, device_recv] {
        if (device_recv)
          st.to_device(host_recv->data(), recv.data, recv_bytes);
        else
          std::copy_n(host_recv->data(), recv_bytes, static_cast<std::byte*>(recv.data));
      });
}

std::unique_ptr<Request> Communicator::iallgather(ConstBuffer send, Buffer recv,
                                                  std::span<const std::size_t> counts, DType t) {
  require(static_cast<int>(counts.size()) == size(), "comm '", name(), "': allgather got ",
          counts.size(), " counts for ", size(), " ranks");
  if (!staged(send.memory) && !staged(recv.memory))
    return post_allgather(send, recv, counts, t);
  const std::size_t es = dtype_size(t);
  const std::size_t send_bytes = counts[static_cast<std::size_t>(rank())] * es;
  const std::size_t recv_bytes = total_of(counts) * es;
  DeviceStaging& st = staging();
  auto host_send = std::make_shared<HostBytes>(send_bytes);
  auto host_recv = std::make_shared<HostBytes>(recv_bytes);
  if (staged(send.memory))
    st.to_host(send.data, host_send->data(), send_bytes);
  else
    std::copy_n(static_cast<const std::byte*>(send.data), send_bytes, host_send->data());
  auto inner = post_allgather({host_send->data()}, {host_recv->data()}, counts, t);
  const bool device_recv = staged(recv.memory);
  return std::make_unique<StagedRequest>(
      std::move(inner), std::vector{host_send, host_recv},
      [&st, host_recv, recv, recv_bytes, device_recv] {
        if (device_recv)
          st.to_device(host_recv->data(), recv.data, recv_bytes);
        else
          std::copy_n(host_recv->data(), recv_bytes, static_cast<std::byte*>(recv.data));
      });
}

std::unique_ptr<Request> Communicator::ibroadcast(Buffer buf, std::size_t bytes, int root) {
  if (!staged(buf.memory)) return post_broadcast(buf, bytes, root);
  auto host = std::make_shared<HostBytes>(bytes);
  DeviceStaging& st = staging();
  if (rank() == root) st.to_host(buf.data, host->data(), bytes);
  return std::make_unique<StagedRequest>(
      post_broadcast({host->data()}, bytes, root), std::vector{host},
      [&st, host, buf, bytes] { st.to_device(host->data(), buf.data, bytes); });
}

std::unique_ptr<Request> Communicator::iallreduce(const Tensor& t, ReduceOp op) {
  return iallreduce(view(t, "allreduce"), static_cast<std::size_t>(t.numel()), t.dtype(), op);
}

std::unique_ptr<Request> Communicator::ireduce_scatter(const Tensor& send, const Tensor& recv,
                                                       std::span<const std::size_t> counts,
                                                       ReduceOp op) {
  require(send.dtype() == recv.dtype(), "comm '", name(), "': reduce_scatter of ",
          dtype_name(send.dtype()), " into ", dtype_name(recv.dtype()));
  require(static_cast<std::size_t>(send.numel()) == total_of(counts), "comm '", name(),
          "': reduce_scatter of a tensor of ", send.numel(), " elements with counts summing to ",
          total_of(counts));
  require(static_cast<int>(counts.size()) == size() &&
              static_cast<std::size_t>(recv.numel()) == counts[static_cast<std::size_t>(rank())],
          "comm '", name(), "': reduce_scatter result tensor of ", recv.numel(),
          " elements does not match this rank's count");
  return ireduce_scatter(const_view(send, "reduce_scatter"), view(recv, "reduce_scatter"), counts,
                         send.dtype(), op);
}

std::unique_ptr<Request> Communicator::iallgather(const Tensor& send, const Tensor& recv,
                                                  std::span<const std::size_t> counts) {
  require(send.dtype() == recv.dtype(), "comm '", name(), "': allgather of ",
          dtype_name(send.dtype()), " into ", dtype_name(recv.dtype()));
  require(static_cast<std::size_t>(recv.numel()) == total_of(counts), "comm '", name(),
          "': allgather into a tensor of ", recv.numel(), " elements with counts summing to ",
          total_of(counts));
  require(static_cast<int>(counts.size()) == size() &&
              static_cast<std::size_t>(send.numel()) == counts[static_cast<std::size_t>(rank())],
          "comm '", name(), "': allgather input tensor of ", send.numel(),
          " elements does not match this rank's count");
  return iallgather(const_view(send, "allgather"), view(recv, "allgather"), counts, send.dtype());
}

std::unique_ptr<Communicator> Communicator::split(int color, int key, std::string name) {
  std::unique_ptr<Communicator> c = make_split(color, key, std::move(name));
  if (c) c->staging_ = staging_;
  return c;
}

}  // namespace wiola::comm
