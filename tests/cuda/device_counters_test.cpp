// The device counters (backend/cuda/device_counters.hpp) on the emulated
// runtime: each runtime call the backend makes is counted once, as the CUDA
// runtime counts it, so tools/gpu-counts.sh reports what a GPU would be asked.
#include <gtest/gtest.h>

#include <vector>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/device_counters.hpp"

namespace wiola::test {
namespace {

using cuda::device_counts;
using cuda::DeviceCounts;

TEST(DeviceCounters, EachRuntimeCallIsCountedOnce) {
  cuda::CudaBackend be(0);
  DeviceCounts c = device_counts();
  const auto since = [&] {
    const DeviceCounts now = device_counts(), d = now - c;
    c = now;
    return d;
  };
  since();
  const Tensor x = be.alloc(DType::F32, 8, 16);  // allocated, then zero-filled
  DeviceCounts d = since();
  EXPECT_EQ(d.allocations, 1);
  EXPECT_EQ(d.memsets, 1);
  EXPECT_GE(d.memset_bytes, 8 * 16 * 4);
  EXPECT_EQ(d.device_operations(), 1);

  std::vector<float> host(8 * 16, 0.5f);
  be.from_host(host.data(), x);  // queued: the host does not wait
  d = since();
  EXPECT_EQ(d.copies, 1);
  EXPECT_EQ(d.host_syncs, 0);
  be.copy_to_host(x.data(), host.data(), host.size() * sizeof(float));  // the host waits to read
  d = since();
  EXPECT_EQ(d.copies, 1);
  EXPECT_EQ(d.host_syncs, 1);
  be.synchronize();
  EXPECT_EQ(since().host_syncs, 1);

  be.fill(x, 2.0);
  d = since();
  EXPECT_EQ(d.launches, 1);
  EXPECT_EQ(d.gemms, 0);
  const Tensor w = be.alloc(DType::F32, 4, 16), y = be.alloc(DType::F32, 8, 4);
  since();
  be.linear_fwd(x, w, y, false);  // one matrix product
  d = since();
  EXPECT_EQ(d.gemms, 1);
  EXPECT_EQ(d.allocations, 0);
  EXPECT_EQ(d.host_syncs, 0);
}

}  // namespace
}  // namespace wiola::test
