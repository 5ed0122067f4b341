// The NCCL communicator on a real GPU (tools/gpu-check.sh runs it; ctest does
// not, it needs a device). Under mpirun:
//
//   wiola_nccl_check collectives   every device-buffer operation of the
//       interface over the groups make_device_groups() builds (pp 2 x dp n/2),
//       checked against values computed on the host. Each rank drives GPU
//       local_rank % visible: with fewer GPUs than ranks the groups fall back
//       to MPI with host staging (rank 0's first line says which), and the
//       same checks run over that path.
//       Also on any number of GPUs: a one-rank NCCL communicator per process
//       ('self'), so the NCCL code path (streams, events, waits, the bf16
//       reduction, teardown) runs even where every group falls back to MPI.
//   wiola_nccl_check kill          the last rank exits as the others enter an
//       all-reduce; they wait on it (device-side) and then synchronise:
//       the watchdog must end every rank within the 5 s timeout, with one
//       line naming rank, host, communicator and call.
//   wiola_nccl_check stall         one GPU is enough: on rank 0's 'self'
//       NCCL communicator an all-reduce is queued behind one whose compute
//       stream never gets there; the second is waited for, so its clock runs
//       and the 2 s timeout must end every rank (through ncclCommAbort,
//       bounded, and MPI_Abort) with the one line.
//
// Prints one line per check and "nccl-check: N checks on R ranks, all passed"
// (or "... FAILED") on rank 0; exits non-zero when any rank failed a check.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi_communicator.hpp"
#include "comm/nccl_communicator.hpp"
#include "core/process_identity.hpp"

using namespace wiola;
using namespace wiola::comm;

namespace {

cudaStream_t g_stream = nullptr;  // the "compute stream" of this driver
int g_failures = 0, g_checks = 0, g_rank = 0;

void cuda_or_die(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  std::fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, what, cudaGetErrorString(rc));
  std::exit(4);
}

// Device memory, written and read through the compute stream.
struct DeviceBuffer {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit DeviceBuffer(std::size_t n) : bytes(n) {
    cuda_or_die(cudaMalloc(&p, n ? n : 1), "cudaMalloc");
    cuda_or_die(cudaMemsetAsync(p, 0xff, n ? n : 1, g_stream), "cudaMemsetAsync");
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::byte* at(std::size_t offset) const { return static_cast<std::byte*>(p) + offset; }
};

template <class T>
void upload(const DeviceBuffer& d, const std::vector<T>& v, std::size_t offset_elems = 0) {
  cuda_or_die(cudaMemcpyAsync(d.at(offset_elems * sizeof(T)), v.data(), v.size() * sizeof(T),
                              cudaMemcpyHostToDevice, g_stream),
              "upload");
  cuda_or_die(cudaStreamSynchronize(g_stream), "cudaStreamSynchronize");
}

// After wait(): the compute stream is ordered after the operation, so a copy
// queued on it now sees the result.
template <class T>
std::vector<T> download(const DeviceBuffer& d, std::size_t n, std::size_t offset_elems = 0) {
  std::vector<T> v(n);
  cuda_or_die(cudaMemcpyAsync(v.data(), d.at(offset_elems * sizeof(T)), n * sizeof(T),
                              cudaMemcpyDeviceToHost, g_stream),
              "download");
  cuda_or_die(cudaStreamSynchronize(g_stream), "cudaStreamSynchronize");
  return v;
}

// Staging for the MPI fallback, ordered on the compute stream.
class CudaStaging final : public DeviceStaging {
 public:
  void to_host(const void* src, void* dst, std::size_t bytes) override {
    cuda_or_die(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g_stream), "to_host");
    cuda_or_die(cudaStreamSynchronize(g_stream), "cudaStreamSynchronize");
  }
  void to_device(const void* src, void* dst, std::size_t bytes) override {
    cuda_or_die(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g_stream), "to_device");
    cuda_or_die(cudaStreamSynchronize(g_stream), "cudaStreamSynchronize");
  }
};

std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>(u >> 16);  // exact for the small integers used here
}
float from_bf16(std::uint16_t h) {
  const std::uint32_t u = std::uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::string transport_of(Communicator& c) {
  return dynamic_cast<NcclCommunicator*>(&c) ? "nccl" : "mpi";
}

template <class T>
void expect_equal(const std::string& name, Communicator& c, const std::vector<T>& got,
                  const std::vector<T>& want) {
  ++g_checks;
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(got[i] == want[i]) && bad++ == 0) first = i;
  if (bad == 0) {
    if (g_rank == 0)
      std::printf("check %s on '%s' (%s): ok\n", name.c_str(), c.name().c_str(),
                  transport_of(c).c_str());
    return;
  }
  ++g_failures;
  std::printf("rank %d: check %s on '%s' (%s) FAILED: %zu of %zu wrong, first [%zu] = %g, "
              "expected %g\n",
              g_rank, name.c_str(), c.name().c_str(), transport_of(c).c_str(), bad, want.size(),
              first, double(got[first]), double(want[first]));
}

// ---- the checks ---------------------------------------------------------------

void check_allreduce(Communicator& c) {
  const int n = c.size(), r = c.rank();
  {
    const std::size_t count = 1003;
    std::vector<float> x(count), want(count);
    for (std::size_t i = 0; i < count; ++i) {
      x[i] = float((r + 1) * (i % 17 + 1));
      want[i] = float((i % 17 + 1) * n * (n + 1) / 2);
    }
    DeviceBuffer d(count * 4);
    upload(d, x);
    c.iallreduce(Buffer{d.p, Device::CUDA}, count, DType::F32, ReduceOp::Sum)->wait();
    expect_equal("allreduce fp32 sum", c, download<float>(d, count), want);
  }
  {
    std::vector<double> x(7), want(7);
    for (int i = 0; i < 7; ++i) {
      x[i] = 0.5 * (r + 1) + i;
      want[i] = 0.25 * n * (n + 1) + double(n) * i;
    }
    DeviceBuffer d(7 * 8);
    upload(d, x);
    auto req = c.iallreduce(Buffer{d.p, Device::CUDA}, 7, DType::F64, ReduceOp::Sum);
    while (!req->test()) std::this_thread::yield();  // test() until done on the device
    expect_equal("allreduce fp64 sum (test)", c, download<double>(d, 7), want);
  }
  {
    std::vector<std::int32_t> x(64), want(64, 0);
    for (int i = 0; i < 64; ++i) {
      x[i] = (i * 7 + r * 13) % 101;
      for (int q = 0; q < n; ++q) want[i] = std::max(want[i], (i * 7 + q * 13) % 101);
    }
    DeviceBuffer d(64 * 4);
    upload(d, x);
    c.iallreduce(Buffer{d.p, Device::CUDA}, 64, DType::I32, ReduceOp::Max)->wait();
    expect_equal("allreduce i32 max", c, download<std::int32_t>(d, 64), want);
  }
  if (transport_of(c) == "nccl") {  // MPI refuses bf16 reductions
    std::vector<std::uint16_t> x(33, to_bf16(float(r + 1)));
    DeviceBuffer d(33 * 2);
    upload(d, x);
    c.iallreduce(Buffer{d.p, Device::CUDA}, 33, DType::BF16, ReduceOp::Sum)->wait();
    std::vector<float> got;
    for (auto h : download<std::uint16_t>(d, 33)) got.push_back(from_bf16(h));
    expect_equal("allreduce bf16 sum", c, got, std::vector<float>(33, float(n * (n + 1) / 2)));
  }
}

void check_reduce_scatter(Communicator& c, const std::string& label,
                          const std::vector<std::size_t>& counts, bool in_place) {
  const int n = c.size(), r = c.rank();
  std::size_t total = 0, off = 0;
  for (int k = 0; k < n; ++k) {
    if (k == r) off = total;
    total += counts[k];
  }
  std::vector<float> x(total);
  for (std::size_t j = 0; j < total; ++j) x[j] = float(r * 1000 + int(j));
  std::vector<float> want(counts[r]);
  for (std::size_t k = 0; k < counts[r]; ++k)
    want[k] = float(1000 * n * (n - 1) / 2 + n * int(off + k));
  DeviceBuffer send(total * 4), recv(counts[r] * 4 + 4);
  upload(send, x);
  ConstBuffer s{send.p, Device::CUDA};
  Buffer d = in_place ? Buffer{send.at(off * 4), Device::CUDA} : Buffer{recv.p, Device::CUDA};
  c.ireduce_scatter(s, d, counts, DType::F32, ReduceOp::Sum)->wait();
  const auto got = in_place ? download<float>(send, counts[r], off) : download<float>(recv, counts[r]);
  expect_equal("reduce_scatter " + label + (in_place ? " in place" : ""), c, got, want);
}

void check_allgather(Communicator& c, const std::string& label,
                     const std::vector<std::size_t>& counts, bool in_place) {
  const int n = c.size(), r = c.rank();
  std::size_t total = 0, off = 0;
  std::vector<std::int32_t> want;
  for (int k = 0; k < n; ++k) {
    if (k == r) off = total;
    for (std::size_t j = 0; j < counts[k]; ++j) want.push_back(k * 100 + int(j));
    total += counts[k];
  }
  std::vector<std::int32_t> mine(want.begin() + std::ptrdiff_t(off),
                                 want.begin() + std::ptrdiff_t(off + counts[r]));
  DeviceBuffer send(counts[r] * 4 + 4), recv(total * 4);
  if (in_place)
    upload(recv, mine, off);
  else
    upload(send, mine);
  ConstBuffer s = in_place ? ConstBuffer{recv.at(off * 4), Device::CUDA}
                           : ConstBuffer{send.p, Device::CUDA};
  c.iallgather(s, Buffer{recv.p, Device::CUDA}, counts, DType::I32)->wait();
  expect_equal("allgather " + label + (in_place ? " in place" : ""), c,
               download<std::int32_t>(recv, total), want);
}

void check_broadcast(Communicator& c) {
  for (int root = 0; root < c.size(); ++root) {
    const std::size_t bytes = 1001;
    std::vector<std::uint8_t> v(bytes), want(bytes);
    for (std::size_t j = 0; j < bytes; ++j) want[j] = std::uint8_t((root * 31 + j) % 251);
    DeviceBuffer d(bytes);
    if (c.rank() == root) upload(d, want);
    c.ibroadcast(Buffer{d.p, Device::CUDA}, bytes, root)->wait();
    expect_equal("broadcast from rank " + std::to_string(root), c,
                 download<std::uint8_t>(d, bytes), want);
  }
}

// A ring of device messages (on a communicator without channels they go to
// the host sibling, staged).
void check_ring(Communicator& c) {
  const int n = c.size(), r = c.rank();
  const std::size_t count = 1024;
  std::vector<float> mine(count), want(count);
  for (std::size_t j = 0; j < count; ++j) {
    mine[j] = float(r * 10000 + int(j));
    want[j] = float(((r + n - 1) % n) * 10000 + int(j));
  }
  DeviceBuffer out(count * 4), in(count * 4);
  upload(out, mine);
  auto rq = c.irecv(Buffer{in.p, Device::CUDA}, count * 4, (r + n - 1) % n, 5);
  auto sq = c.isend(ConstBuffer{out.p, Device::CUDA}, count * 4, (r + 1) % n, 5);
  rq->wait();
  sq->wait();
  expect_equal("ring send/recv", c, download<float>(in, count), want);
}

// Stage 0 and 1 exchange activations and gradients in the order of a 1F1B
// pipeline, which deadlocks one in-order NCCL queue per communicator: stage 0
// posts "send A_k, receive G_k" for every k before waiting; stage 1 posts all
// receives of A first and sends G_k only after A_k arrived. A host header
// (through the host sibling) goes with every device message.
void check_pipeline_exchange(Communicator& c) {
  if (c.size() != 2) return;
  const int k_max = 4;
  const std::size_t count = 4096;
  const int tag_header = 0, tag_data = 1;
  auto value = [&](int k, std::size_t j) { return float(k * 100000 + int(j)); };
  // Every buffer first: no allocation (which may synchronise the device)
  // while messages are in flight.
  std::vector<std::unique_ptr<DeviceBuffer>> acts, grads;
  for (int k = 0; k < k_max; ++k) {
    acts.push_back(std::make_unique<DeviceBuffer>(count * 4));
    grads.push_back(std::make_unique<DeviceBuffer>(count * 4));
  }
  std::vector<std::int32_t> headers_in(k_max, -1), headers_out(k_max);
  std::vector<std::unique_ptr<Request>> sends, recvs;
  if (c.rank() == 0) {
    for (int k = 0; k < k_max; ++k) {
      std::vector<float> a(count);
      for (std::size_t j = 0; j < count; ++j) a[j] = value(k, j);
      upload(*acts[k], a);
    }
    for (int k = 0; k < k_max; ++k) {
      headers_out[k] = k;
      sends.push_back(c.isend(&headers_out[k], 4, 1, tag_header));
      sends.push_back(c.isend(ConstBuffer{acts[k]->p, Device::CUDA}, count * 4, 1, tag_data));
      recvs.push_back(c.irecv(&headers_in[k], 4, 1, tag_header));
      recvs.push_back(c.irecv(Buffer{grads[k]->p, Device::CUDA}, count * 4, 1, tag_data));
    }
    for (auto& q : recvs) q->wait();
    for (auto& q : sends) q->wait();
    std::vector<float> got, want;
    for (int k = 0; k < k_max; ++k) {
      const auto g = download<float>(*grads[k], count);
      got.insert(got.end(), g.begin(), g.end());
      for (std::size_t j = 0; j < count; ++j) want.push_back(2 * value(k, j) + 1);
      got.push_back(float(headers_in[k]));
      want.push_back(float(k + 10));
    }
    expect_equal("1F1B exchange", c, got, want);
  } else {
    for (int k = 0; k < k_max; ++k) {
      recvs.push_back(c.irecv(&headers_in[k], 4, 0, tag_header));
      recvs.push_back(c.irecv(Buffer{acts[k]->p, Device::CUDA}, count * 4, 0, tag_data));
    }
    for (int k = 0; k < k_max; ++k) {
      recvs[2 * k]->wait();
      recvs[2 * k + 1]->wait();
      std::vector<float> a = download<float>(*acts[k], count);  // "compute": G_k = 2 A_k + 1
      for (float& x : a) x = 2 * x + 1;
      upload(*grads[k], a);
      headers_out[k] = headers_in[k] + 10;
      sends.push_back(c.isend(&headers_out[k], 4, 0, tag_header));
      sends.push_back(c.isend(ConstBuffer{grads[k]->p, Device::CUDA}, count * 4, 0, tag_data));
    }
    for (auto& q : sends) q->wait();
    ++g_checks;  // stage 1's part: it got here, no deadlock
  }
  // wait() ordered the compute stream after the device messages; the buffers
  // are freed once it got there.
  cuda_or_die(cudaStreamSynchronize(g_stream), "cudaStreamSynchronize");
}

void check_split(Communicator& world) {
  // Halves of the world: NCCL when the half's ranks have a GPU each.
  auto half = world.split(world.rank() % 2, world.rank(), "half");
  if (!half || half->size() < 2) return;
  std::vector<float> x(5, float(world.rank())), want(5, 0);
  for (int q = world.rank() % 2; q < world.size(); q += 2)
    for (float& w : want) w += float(q);
  DeviceBuffer d(5 * 4);
  upload(d, x);
  half->iallreduce(Buffer{d.p, Device::CUDA}, 5, DType::F32, ReduceOp::Sum)->wait();
  expect_equal("allreduce after split", *half, download<float>(d, 5), want);
}

void run_collectives(Communicator& c) {
  const int n = c.size();
  check_allreduce(c);
  std::vector<std::size_t> even(n, 5), uneven(n), bucket(n);
  for (int k = 0; k < n; ++k) {
    uneven[k] = 2 + std::size_t(k % 3);                     // ZeRO shards: differ by a little
    bucket[k] = k % 2 == 0 ? 0 : 5 + std::size_t(k);         // ZeRO-2 bucket: a few shards
  }
  for (bool in_place : {false, true}) {
    check_reduce_scatter(c, "even", even, in_place);
    check_reduce_scatter(c, "uneven", uneven, in_place);
    check_reduce_scatter(c, "bucket", bucket, in_place);
    check_allgather(c, "even", even, in_place);
    check_allgather(c, "uneven", uneven, in_place);
    check_allgather(c, "bucket", bucket, in_place);
  }
  check_broadcast(c);
  c.barrier();
}

// A one-rank NCCL communicator of this process (NCCL allows it on a shared GPU).
std::unique_ptr<NcclCommunicator> self_nccl(MpiCommunicator& w, std::optional<double> timeout) {
  NcclOptions o;
  o.compute_stream = g_stream;
  o.timeout = timeout;
  return std::make_unique<NcclCommunicator>(w.split(w.rank(), 0, "self"), o);
}

int collectives(MpiRuntime& mpi) {
  MpiCommunicator& w = mpi.world();
  {
    auto self = self_nccl(w, std::nullopt);
    run_collectives(*self);
  }
  const int n = w.size();
  const ProcessGrid g = ProcessGrid::make(n, n % 2 == 0 ? 2 : 1, n % 2 == 0 ? n / 2 : n, w.rank());
  DeviceGroups dg = make_device_groups(w, g, g_stream, &std::cout);
  std::cout << std::flush;
  Communicator& world = dg.world ? *dg.world : w;
  if (g_rank == 0)
    std::printf("grid pp %d x dp %d; world over %s\n", g.pp, g.dp, transport_of(world).c_str());
  run_collectives(world);
  check_ring(world);
  if (dg.groups.data->size() > 1) run_collectives(*dg.groups.data);
  check_pipeline_exchange(*dg.groups.pipeline);
  check_split(world);
  const int failed = w.allreduce_value<std::int32_t>(g_failures, ReduceOp::Sum);
  const int checks = w.allreduce_value<std::int32_t>(g_checks, ReduceOp::Sum);
  if (g_rank == 0)
    std::printf("nccl-check: %d checks on %d ranks, %s\n", checks, n,
                failed ? "FAILED" : "all passed");
  return failed ? 1 : 0;
}

int kill_one(MpiRuntime& mpi) {
  MpiCommunicator& w = mpi.world();
  const ProcessGrid g = ProcessGrid::make(w.size(), 1, w.size(), w.rank());
  DeviceGroups dg = make_device_groups(w, g, g_stream, &std::cout);
  std::cout << std::flush;
  Communicator& world = dg.world ? *dg.world : w;
  if (auto* nc = dynamic_cast<NcclCommunicator*>(&world)) nc->set_timeout(5);
  w.set_timeout(5);
  DeviceBuffer d(4 * 4);
  upload(d, std::vector<float>{1, 2, 3, 4});
  world.iallreduce(Buffer{d.p, Device::CUDA}, 4, DType::F32, ReduceOp::Sum)->wait();  // all alive
  download<float>(d, 4);
  w.barrier();
  // The last rank leaves as the others enter the next all-reduce. (Posting
  // its part first would let a two-rank all-reduce finish on the others.)
  if (w.rank() == w.size() - 1) {
    std::fprintf(stderr, "rank %d exits with status 3 as the others enter an all-reduce\n",
                 g_rank);
    std::fflush(stderr);
    std::_Exit(3);
  }
  auto req = world.iallreduce(Buffer{d.p, Device::CUDA}, 4, DType::F32, ReduceOp::Sum);
  req->wait();
  // The host blocks here until the device gets past the wait: never, so the
  // watchdog must end the job. (If ncclCommAbort lets the stream go on just
  // before the end, the next call into the communicator parks the thread.)
  cudaStreamSynchronize(g_stream);
  world.barrier();
  std::fprintf(stderr, "rank %d: the all-reduce completed without the dead rank\n", g_rank);
  return 0;
}

void CUDART_CB block_forever(void*) {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

int stall(MpiRuntime& mpi) {
  MpiCommunicator& w = mpi.world();
  w.set_timeout(30);
  auto self = self_nccl(w, 2.0);
  DeviceBuffer d(4 * 4);
  cuda_or_die(cudaStreamSynchronize(g_stream), "cudaStreamSynchronize");
  w.barrier();
  if (w.rank() != 0) {
    w.barrier();  // rank 0 never comes: its watchdog ends the job first
    return 0;
  }
  cudaStream_t blocked = nullptr;
  cuda_or_die(cudaStreamCreateWithFlags(&blocked, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_or_die(cudaLaunchHostFunc(blocked, block_forever, nullptr), "cudaLaunchHostFunc");
  // Issued after `blocked`, which never gets there: the communicator's stream
  // stops at it. Never waited for, so never timed.
  self->set_compute_stream(blocked);
  auto stuck = self->iallreduce(Buffer{d.p, Device::CUDA}, 4, DType::F32, ReduceOp::Sum);
  // Queued behind it on the communicator's stream; waited for on g_stream,
  // which reaches the wait at once: its clock runs.
  self->set_compute_stream(g_stream);
  auto req = self->iallreduce(Buffer{d.p, Device::CUDA}, 4, DType::F32, ReduceOp::Sum);
  req->wait();
  cudaStreamSynchronize(g_stream);
  self->barrier();
  std::fprintf(stderr, "rank 0: the stalled all-reduce completed\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MpiRuntime mpi(&argc, &argv, ThreadLevel::Funneled, 60.0);
  g_rank = mpi.world_rank();
  const std::string mode = argc > 1 ? argv[1] : "collectives";
  int visible = 0;
  cuda_or_die(cudaGetDeviceCount(&visible), "cudaGetDeviceCount");
  const int device = process_identity().local_rank % visible;
  cuda_or_die(cudaSetDevice(device), "cudaSetDevice");
  cuda_or_die(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  mpi.world().set_device_staging(std::make_shared<CudaStaging>());
  if (g_rank == 0)
    std::printf("nccl-check %s: %d ranks, %d visible GPU(s), NCCL %s\n", mode.c_str(),
                mpi.world_size(), visible, nccl_version().c_str());
  std::fflush(stdout);
  if (mode == "collectives") return collectives(mpi);
  if (mode == "kill") return kill_one(mpi);
  if (mode == "stall") return stall(mpi);
  std::fprintf(stderr, "wiola_nccl_check: unknown mode %s (collectives, kill, stall)\n",
               mode.c_str());
  return 2;
}
