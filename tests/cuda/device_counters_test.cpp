// The device counters (backend/cuda/device_counters.hpp) on the emulated
// runtime: each runtime call the backend makes is counted once, as the CUDA
// runtime counts it, so tools/gpu-counts.sh reports what a GPU would be asked.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cuda/device_counters.hpp"
#include "core/error.hpp"
#include "core/model_config.hpp"
#include "model/stage_model.hpp"
#include "cuda_emu.hpp"
#include "runtime_emu.hpp"
#include "synthetic_input.hpp"

namespace wiola::test {
namespace {

using cuda::device_counts;
using cuda::DeviceCounts;

// What wiola-bench reads through the backend interface is the process's
// counters; the CPU counts nothing.
TEST(DeviceCounters, TheBackendInterfaceReadsTheProcessCounters) {
  cuda::CudaBackend cuda_be(0);
  const Backend& be = cuda_be;
  const Tensor x = cuda_be.alloc(DType::F32, 8, 16), w = cuda_be.alloc(DType::F32, 4, 16),
               y = cuda_be.alloc(DType::F32, 8, 4);
  const std::optional<DeviceCounts> before = be.device_counts();
  ASSERT_TRUE(before.has_value());
  const DeviceCounts direct = device_counts();
  cuda_be.linear_fwd(x, w, y, false);
  cuda_be.fill(x, 1.0);
  const std::optional<DeviceCounts> after = be.device_counts();
  ASSERT_TRUE(after.has_value());
  const DeviceCounts d = *after - *before, e = device_counts() - direct;
  EXPECT_EQ(d.gemms, 1);
  EXPECT_EQ(d.gemm_flops, 2 * 8 * 4 * 16);
  EXPECT_EQ(d.launches, 1);
  EXPECT_EQ(d.gemms, e.gemms);
  EXPECT_EQ(d.launches, e.launches);
  EXPECT_EQ(d.kernel_bytes, e.kernel_bytes);
  EXPECT_FALSE(CpuBackend().device_counts().has_value());
}

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

// The DSFF's two activations: one launch moving exactly their operands
// where every view's rows hold whole 16-byte packs, else one launch each.
TEST(DeviceCounters, TheDsffActivationsAreOneLaunchWhereTheirViewsAllow) {
  cuda::CudaBackend be(0);
  for (const int da : {16, 13}) {
    SCOPED_TRACE(da);
    const int n = 5, db = 4 * da;
    const Tensor gu = be.alloc(DType::BF16, n, 2 * da), ub = be.alloc(DType::BF16, n, db);
    const Tensor ga = gu.cols_slice(0, da), ua = gu.cols_slice(da, 2 * da);
    const Tensor ha = be.alloc(DType::BF16, n, da), hb = be.alloc(DType::BF16, n, db);
    const Tensor dgu = be.alloc(DType::BF16, n, 2 * da), dub = be.alloc(DType::BF16, n, db);
    const std::int64_t expected = da % 8 == 0 ? 1 : 2;
    DeviceCounts before = device_counts();
    be.dsff_act_fwd(ga, ua, ub, ha, hb);
    DeviceCounts d = device_counts() - before;
    EXPECT_EQ(d.launches, expected);
    EXPECT_EQ(d.kernel_bytes, d.floor_bytes);
    before = device_counts();
    be.dsff_act_bwd(ga, ua, ha, ub, hb, dgu.cols_slice(0, da), dgu.cols_slice(da, 2 * da), dub);
    d = device_counts() - before;
    EXPECT_EQ(d.launches, expected);
    EXPECT_EQ(d.kernel_bytes, d.floor_bytes);
  }
}

// The non-GEMM bytes and their floor (device_counters.hpp): a one-pass
// kernel moves exactly its operands; an output an op adds into counts as
// read and written in both; a gather's floor is the rows it selects; a
// matrix product counts in neither; a memset and a device copy count in the
// bytes only.
TEST(DeviceCounters, BytesAndTheirFloorFollowTheOperands) {
  cuda::CudaBackend be(0);
  const std::int64_t f32 = 4, bf16 = 2;
  DeviceCounts c = device_counts();
  const auto since = [&] {
    const DeviceCounts now = device_counts(), d = now - c;
    c = now;
    return d;
  };
  const Tensor a = be.alloc_uninit(DType::F32, 8, 16), b = be.alloc_uninit(DType::F32, 8, 16),
               out = be.alloc_uninit(DType::F32, 8, 16);
  be.fill(a, 1.0);
  be.fill(b, 2.0);
  since();
  be.add(a, b, out);
  DeviceCounts d = since();
  EXPECT_EQ(d.kernel_bytes, 3 * 8 * 16 * f32);
  EXPECT_EQ(d.floor_bytes, 3 * 8 * 16 * f32);
  be.axpy(0.5, a, out);  // out read and written
  d = since();
  EXPECT_EQ(d.kernel_bytes, 3 * 8 * 16 * f32);
  EXPECT_EQ(d.floor_bytes, 3 * 8 * 16 * f32);
  be.scale(out, 2.0);  // in place: read and written
  d = since();
  EXPECT_EQ(d.floor_bytes, 2 * 8 * 16 * f32);
  EXPECT_EQ(d.non_gemm_bytes(), d.floor_bytes);

  // A gather reads the rows its tokens select, not the whole table.
  const Tensor table = be.alloc_uninit(DType::BF16, 1000, 64),
               tokens = be.alloc_uninit(DType::I32, 5, 1), rows = be.alloc_uninit(DType::BF16, 5, 64);
  be.fill(tokens, 3.0);
  since();
  be.embedding_fwd(tokens, table, rows);
  d = since();
  EXPECT_EQ(d.floor_bytes, 5 * 4 + 2 * 5 * 64 * bf16);
  EXPECT_EQ(d.kernel_bytes, d.floor_bytes);

  const Tensor w = be.alloc_uninit(DType::F32, 4, 16), y = be.alloc_uninit(DType::F32, 8, 4);
  since();
  be.linear_fwd(a, w, y, false);
  d = since();
  EXPECT_EQ(d.non_gemm_bytes() + d.floor_bytes, 0);

  (void)be.alloc(DType::F32, 8, 16);  // zero-filled: bytes written, nothing in the floor
  d = since();
  EXPECT_GE(d.memset_bytes, 8 * 16 * f32);
  EXPECT_EQ(d.non_gemm_bytes(), d.memset_bytes);
  EXPECT_EQ(d.floor_bytes, 0);
}

// A released tensor's block serves the next tensor of its size (or up to 1/8
// smaller) without an allocation; alloc() still hands out zeros.
TEST(DeviceCounters, ReleasedBlocksServeLaterTensors) {
  cuda::CudaBackend be(0);
  DeviceCounts c = device_counts();
  const auto allocations = [&] {
    const DeviceCounts now = device_counts();
    const std::int64_t n = (now - c).allocations;
    c = now;
    return n;
  };
  {
    const Tensor a = be.alloc_uninit(DType::F32, 64, 64);  // 16 KiB
    be.fill(a, 3.0);
  }
  EXPECT_EQ(allocations(), 1);
  {
    const Tensor b = be.alloc(DType::F32, 64, 64);  // a's block
    EXPECT_EQ(allocations(), 0);
    std::vector<float> host(64 * 64, -1.0f);
    be.copy_to_host(b.data(), host.data(), host.size() * sizeof(float));
    for (float v : host) ASSERT_EQ(v, 0.0f);
    const Tensor d = be.alloc_uninit(DType::F32, 64, 60);  // 15 KiB: a's block is taken
    EXPECT_EQ(allocations(), 1);
  }
  EXPECT_EQ(be.memory().in_use, 0u);
  {
    const Tensor e = be.alloc_uninit(DType::F32, 64, 58);  // 14.5 KiB: the 15 KiB block
    EXPECT_EQ(allocations(), 0);
    const Tensor f = be.alloc_uninit(DType::F32, 64, 32);  // 8 KiB: 16 KiB is too large a block
    EXPECT_EQ(allocations(), 1);
  }
}

// On a full device the cached blocks go back to the driver and the allocation
// is tried again; past that, the error names the tensor.
TEST(DeviceCounters, AFullDeviceTakesTheCacheBack) {
  struct Unlimit {
    ~Unlimit() { cuda::emu_set_memory_limit(0); }
  } unlimit;
  cuda::CudaBackend be(0);
  {
    const Tensor a = be.alloc_uninit(DType::F32, 256, 256), b = be.alloc_uninit(DType::F32, 256, 256);
  }
  const std::size_t held = cuda::emu_memory_in_use();  // a and b (256 KiB each) cached
  cuda::emu_set_memory_limit(held + 600 * 1024);
  const DeviceCounts before = device_counts();
  const Tensor big = be.alloc_uninit(DType::F32, 512, 512);  // 1 MiB: fits once a and b are gone
  EXPECT_EQ((device_counts() - before).allocations, 2);  // refused, then granted
  EXPECT_EQ(cuda::emu_memory_in_use(), held - 512 * 1024 + 1024 * 1024);
  try {
    (void)be.alloc_uninit(DType::F32, 1024, 1024);
    FAIL() << "a 4 MiB tensor fit in 88 KiB";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory allocating 4194304 bytes for an uninitialised "
                                         "1024x1024 fp32 tensor"),
              std::string::npos)
        << e.what();
  }
}

// The attention FLOPs the kernels declare at launch are the tensor cores'
// work: every 16x16x16 mma_sync the emulation runs, in a training
// micro-batch without ATM (where a causal mask's tiles are exactly the ones
// visited), with whole and partial last tiles.
TEST(DeviceCounters, AttentionFlopsAreTheTensorCoresWork) {
  for (const int T : {128, 100}) {
    ModelConfig cfg = preset("wiola-small");
    cfg.atm = AtmMode::Off;
    cfg.L = 2;
    cuda::CudaBackend be(0);
    StageModel model(be, cfg, StageSpec::whole(cfg), DType::BF16);
    model.params().init(5);
    const int B = 2;
    const StageInput in = synthetic_input(be, cfg, B, T);
    const DeviceCounts before = device_counts();
    const std::int64_t mma_before = emu::tensor_core_traffic().mma_flops;
    StageSaved saved;
    (void)model.forward(in, /*training=*/true, saved);
    model.backward(Tensor{}, {}, 1.0 / (B * T), saved);
    const DeviceCounts d = device_counts() - before;
    const std::int64_t mma = emu::tensor_core_traffic().mma_flops - mma_before;
    EXPECT_GT(mma, 0);
    EXPECT_EQ(d.attention_flops, mma) << "T = " << T;
  }
}

}  // namespace
}  // namespace wiola::test
