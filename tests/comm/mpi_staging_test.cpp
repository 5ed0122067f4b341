// Device buffers over a transport that reads only host memory (Debian's MPI):
// the communicator stages them through host copies with the DeviceStaging its
// owner installed. "Device" memory here is host memory labelled Device::CUDA;
// the staging copies it and counts the copies, so the tests see both that the
// results are right and that every device byte went through the staging.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "mpi_test_env.hpp"

namespace wiola::comm::test {
namespace {

struct CountingStaging final : DeviceStaging {
  std::size_t to_host_bytes = 0, to_device_bytes = 0;
  void to_host(const void* src, void* dst, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
    to_host_bytes += bytes;
  }
  void to_device(const void* src, void* dst, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
    to_device_bytes += bytes;
  }
};

// A [rows, cols] F32 tensor in "device" memory.
Tensor device_tensor(std::vector<float>& host, std::int64_t rows, std::int64_t cols) {
  host.resize(static_cast<std::size_t>(rows * cols));
  auto* p = reinterpret_cast<std::byte*>(host.data());
  return Tensor(nullptr, p, DType::F32, Device::CUDA, rows, cols, cols);
}

struct StagingScope {
  StagingScope() : staging(std::make_shared<CountingStaging>()) {
    world().set_device_staging(staging);
  }
  ~StagingScope() { world().set_device_staging(nullptr); }
  std::shared_ptr<CountingStaging> staging;
};

TEST(mpiStaging, DeviceBufferWithoutStagingIsRefusedByName) {
  auto& w = world();
  ASSERT_FALSE(w.reads_device_memory());  // Debian's Open MPI has no CUDA support
  std::vector<float> h;
  const Tensor t = device_tensor(h, 1, 4);
  try {
    w.allreduce(t, ReduceOp::Sum);
    FAIL() << "a device buffer without staging was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no device staging"), std::string::npos) << e.what();
  }
}

TEST(mpiStaging, PointToPointRing) {
  auto& w = world();
  StagingScope scope;
  const int n = w.size(), me = w.rank();
  std::vector<float> out_h, in_h;
  const Tensor out = device_tensor(out_h, 3, 5), in = device_tensor(in_h, 3, 5);
  for (std::size_t i = 0; i < out_h.size(); ++i) out_h[i] = float(me * 100 + int(i));
  auto rq = w.irecv(in, (me + n - 1) % n, 4);
  auto sq = w.isend(out, (me + 1) % n, 4);
  sq->wait();
  rq->wait();
  const int from = (me + n - 1) % n;
  for (std::size_t i = 0; i < in_h.size(); ++i) ASSERT_EQ(in_h[i], float(from * 100 + int(i)));
  EXPECT_EQ(scope.staging->to_host_bytes, out.bytes());
  EXPECT_EQ(scope.staging->to_device_bytes, in.bytes());
}

TEST(mpiStaging, AllreduceReduceScatterAllgatherBroadcast) {
  auto& w = world();
  StagingScope scope;
  const int n = w.size(), me = w.rank();
  const std::size_t total = 10;
  std::vector<std::size_t> counts(n, total / n);
  for (std::size_t r = 0; r < total % n; ++r) ++counts[r];
  const std::size_t offset = std::accumulate(counts.begin(), counts.begin() + me, std::size_t{0});

  std::vector<float> a_h;
  const Tensor a = device_tensor(a_h, 1, total);
  for (std::size_t i = 0; i < total; ++i) a_h[i] = float((me + 1) * int(i + 1));
  w.allreduce(a, ReduceOp::Sum);
  for (std::size_t i = 0; i < total; ++i) ASSERT_EQ(a_h[i], float(int(i + 1) * n * (n + 1) / 2));

  // Reduce-scatter in place (own shard of the full buffer) and into another tensor.
  for (bool in_place : {true, false}) {
    std::vector<float> s_h, r_h;
    const Tensor s = device_tensor(s_h, 1, total);
    for (std::size_t i = 0; i < total; ++i) s_h[i] = float((me + 1) * int(i + 1));
    const Tensor r = in_place ? s.range(offset, counts[me]) : device_tensor(r_h, 1, counts[me]);
    w.reduce_scatter(s, r, counts, ReduceOp::Sum);
    const float* got = in_place ? s_h.data() + offset : r_h.data();
    for (std::size_t i = 0; i < counts[me]; ++i)
      ASSERT_EQ(got[i], float(int(offset + i + 1) * n * (n + 1) / 2)) << in_place;
  }

  // Allgather in place: each rank fills its shard.
  std::vector<float> g_h;
  const Tensor g = device_tensor(g_h, 1, total);
  for (std::size_t i = 0; i < counts[me]; ++i) g_h[offset + i] = float(offset + i);
  w.allgather(g.range(offset, counts[me]), g, counts);
  for (std::size_t i = 0; i < total; ++i) ASSERT_EQ(g_h[i], float(i));

  std::vector<float> b_h;
  const Tensor b = device_tensor(b_h, 1, 4);
  if (me == n - 1) std::iota(b_h.begin(), b_h.end(), 7.0f);
  w.ibroadcast(Buffer{b.data(), b.device()}, b.bytes(), n - 1)->wait();
  for (std::size_t i = 0; i < 4; ++i) ASSERT_EQ(b_h[i], float(7 + i));

  EXPECT_GT(scope.staging->to_host_bytes, 0u);
  EXPECT_GT(scope.staging->to_device_bytes, 0u);
}

TEST(mpiStaging, SplitCommunicatorsShareTheStaging) {
  auto& w = world();
  StagingScope scope;
  auto half = w.split(w.rank() % 2, w.rank(), "half");
  ASSERT_NE(half, nullptr);
  std::vector<float> h;
  const Tensor t = device_tensor(h, 1, 3);
  std::fill(h.begin(), h.end(), 1.0f);
  half->allreduce(t, ReduceOp::Sum);
  for (float v : h) EXPECT_EQ(v, float(half->size()));
  EXPECT_EQ(scope.staging->to_device_bytes, t.bytes());
}

TEST(mpiStaging, TensorShapeMismatchIsAnError) {
  auto& w = world();
  StagingScope scope;
  std::vector<float> s_h, r_h;
  const Tensor s = device_tensor(s_h, 1, 7), r = device_tensor(r_h, 1, 7);
  std::vector<std::size_t> counts(w.size(), 1);
  EXPECT_THROW(w.reduce_scatter(s, r, counts, ReduceOp::Sum), Error);
}

}  // namespace
}  // namespace wiola::comm::test
