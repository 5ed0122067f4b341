// The emulation of the CUDA execution model against its documented semantics:
// indices, block barriers, shared memory per block, warp shuffles and votes,
// partial warps, bf16 rounding, and what it refuses (deadlocks,
// bad launch shapes, exceptions inside a kernel).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "cuda_emu.hpp"  // before the kernel source's view of CUDA, as in the emulated build
#include "backend/cuda/cuda_compat.hpp"

namespace {

__global__ void write_global_index(int* out) {
  const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int per_block = blockDim.x * blockDim.y * blockDim.z;
  const int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  out[block * per_block + tid] = block * per_block + tid;
}

TEST(cudaEmu, IndicesCoverGridAndBlockInEveryDimension) {
  const dim3 grid(3, 2, 2), block(5, 4, 2);
  std::vector<int> out(3 * 2 * 2 * 5 * 4 * 2, -1);
  WIOLA_LAUNCH(write_global_index, grid, block, 0, 0)(out.data());
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], int(i));
}

// Each thread reads its neighbour's value after a barrier: right only if the
// barrier really holds every thread until all have written.
__global__ void rotate_through_shared(const int* in, int* out, int n) {
  __shared__ int buf[256];
  const int t = threadIdx.x;
  buf[t] = in[blockIdx.x * n + t] * 10;
  __syncthreads();
  out[blockIdx.x * n + t] = buf[(t + 1) % n];
}

TEST(cudaEmu, SyncthreadsOrdersWritesBeforeReads) {
  const int n = 200, blocks = 3;
  std::vector<int> in(n * blocks), out(n * blocks, 0);
  std::iota(in.begin(), in.end(), 1);
  WIOLA_LAUNCH(rotate_through_shared, dim3(blocks), dim3(n), 0, 0)(in.data(), out.data(), n);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < n; ++t) ASSERT_EQ(out[b * n + t], in[b * n + (t + 1) % n] * 10);
}

// A tree reduction in shared memory with a barrier per level, per block.
__global__ void block_sum(const float* x, float* sums) {
  __shared__ float s[128];
  const int t = threadIdx.x;
  s[t] = x[blockIdx.x * 128 + t];
  __syncthreads();
  for (int stride = 64; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) sums[blockIdx.x] = s[0];
}

TEST(cudaEmu, SharedMemoryBelongsToOneBlock) {
  std::vector<float> x(4 * 128), sums(4, 0);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 128) + 1000.0f * float(i / 128);
  WIOLA_LAUNCH(block_sum, dim3(4), dim3(128), 0, 0)(x.data(), sums.data());
  for (int b = 0; b < 4; ++b) EXPECT_EQ(sums[b], 127.0f * 128 / 2 + 1000.0f * b * 128);
}

__global__ void warp_ops(const int* in, int* xor_sum, int* down_sum, int* up, int* bcast,
                         unsigned* ballot) {
  const int t = threadIdx.x;
  int v = in[t];
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  xor_sum[t] = v;
  int d = in[t];
  for (int off = 16; off > 0; off /= 2) d += __shfl_down_sync(0xffffffffu, d, off);
  down_sum[t] = d;
  up[t] = __shfl_up_sync(0xffffffffu, in[t], 1);
  bcast[t] = __shfl_sync(0xffffffffu, in[t], 5);
  ballot[t] = __ballot_sync(0xffffffffu, in[t] % 2 == 0);
}

TEST(cudaEmu, WarpShufflesAndBallotFollowTheirDefinitions) {
  const int n = 64;  // two warps
  std::vector<int> in(n), xs(n), ds(n), up(n), bc(n);
  std::vector<unsigned> ballot(n);
  for (int i = 0; i < n; ++i) in[i] = i * i % 7;
  WIOLA_LAUNCH(warp_ops, dim3(1), dim3(n), 0, 0)(in.data(), xs.data(), ds.data(), up.data(),
                                                  bc.data(), ballot.data());
  for (int w = 0; w < 2; ++w) {
    int sum = 0;
    unsigned even = 0;
    for (int l = 0; l < 32; ++l) {
      sum += in[w * 32 + l];
      if (in[w * 32 + l] % 2 == 0) even |= 1u << l;
    }
    for (int l = 0; l < 32; ++l) {
      const int t = w * 32 + l;
      EXPECT_EQ(xs[t], sum) << t;
      if (l == 0) {
        EXPECT_EQ(ds[t], sum);
      }
      EXPECT_EQ(up[t], l == 0 ? in[t] : in[t - 1]) << t;
      EXPECT_EQ(bc[t], in[w * 32 + 5]) << t;
      EXPECT_EQ(ballot[t], even) << t;
    }
  }
}

// 40 threads: the second warp has 8 lanes; lanes that do not exist take no part.
__global__ void partial_warp(unsigned* out) {
  const int t = threadIdx.x;
  out[t] = __ballot_sync(0xffffffffu, 1);
}

TEST(cudaEmu, APartialWarpHasOnlyItsLanes) {
  std::vector<unsigned> out(40);
  WIOLA_LAUNCH(partial_warp, dim3(1), dim3(40), 0, 0)(out.data());
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[t], 0xffffffffu);
  for (int t = 32; t < 40; ++t) EXPECT_EQ(out[t], 0xffu);
}

TEST(cudaEmu, ThreadsThatExitEarlyDoNotBlockABarrier) {
  // A common pattern: out-of-range threads return before the barrier.
  std::vector<int> in(50), out(50, 0);
  std::iota(in.begin(), in.end(), 0);
  auto k = [](const int* a, int* b, int n) {
    __shared__ int s[64];
    const int t = threadIdx.x;
    if (t >= n) return;
    s[t] = a[t];
    __syncthreads();
    b[t] = s[n - 1 - t];
  };
  WIOLA_LAUNCH(k, dim3(1), dim3(64), 0, 0)(in.data(), out.data(), 50);
  for (int t = 0; t < 50; ++t) EXPECT_EQ(out[t], 49 - t);
}

TEST(cudaEmu, DivergentBarriersAreADeadlock) {
  auto k = [] {
    if (threadIdx.x == 0)
      __shfl_sync(0xffffffffu, 1, 0);
    else
      __syncthreads();
  };
  try {
    WIOLA_LAUNCH(k, dim3(2), dim3(64), 0, 0)();
    FAIL() << "a deadlock went unnoticed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
  }
}

TEST(cudaEmu, ExceptionsInsideAKernelReachTheLauncher) {
  auto k = [] {
    if (blockIdx.x == 1 && threadIdx.x == 3) throw std::out_of_range("thread (3) of block 1");
    __syncthreads();
  };
  EXPECT_THROW(WIOLA_LAUNCH(k, dim3(2), dim3(8), 0, 0)(), std::out_of_range);
  // The emulation is usable again afterwards.
  std::vector<int> out(8);
  WIOLA_LAUNCH(write_global_index, dim3(1), dim3(8), 0, 0)(out.data());
  EXPECT_EQ(out[7], 7);
}

TEST(cudaEmu, BadLaunchShapesAreRefused) {
  std::vector<int> out(2048);
  EXPECT_THROW(WIOLA_LAUNCH(write_global_index, dim3(1), dim3(2048), 0, 0)(out.data()),
               std::invalid_argument);
}

__global__ void use_dynamic_shared(float* out, int n) {
  WIOLA_DYNAMIC_SHARED(float, s);
  s[threadIdx.x] = float(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = s[n - 1 - threadIdx.x];
}

TEST(cudaEmu, DynamicSharedMemoryHasTheLaunchSize) {
  std::vector<float> out(96);
  WIOLA_LAUNCH(use_dynamic_shared, dim3(1), dim3(96), 96 * sizeof(float), 0)(out.data(), 96);
  for (int t = 0; t < 96; ++t) EXPECT_EQ(out[t], float(95 - t));
}

// Above 48 KiB a kernel must raise its limit first (cudaFuncSetAttribute), as
// on a GPU; the attribute is per kernel and capped at the device's 227 KiB.
__global__ void big_dynamic_shared(int* out, int n) {
  WIOLA_DYNAMIC_SHARED(int, s);
  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = i;
  __syncthreads();
  out[threadIdx.x] = s[n - 1 - int(threadIdx.x)];
}
__global__ void other_big_dynamic_shared(int* out, int n) {
  WIOLA_DYNAMIC_SHARED(int, s);
  s[threadIdx.x] = n;
  out[threadIdx.x] = s[threadIdx.x];
}

TEST(cudaEmu, DynamicSharedMemoryAbove48KiBNeedsTheKernelAttribute) {
  const int n = 20000;  // 80,000 bytes
  const std::size_t bytes = n * sizeof(int);
  std::vector<int> out(64);
  EXPECT_THROW(WIOLA_LAUNCH(big_dynamic_shared, dim3(1), dim3(64), bytes, 0)(out.data(), n),
               std::invalid_argument);
  ASSERT_EQ(cudaFuncSetAttribute(big_dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 int(bytes)),
            cudaSuccess);
  WIOLA_LAUNCH(big_dynamic_shared, dim3(1), dim3(64), bytes, 0)(out.data(), n);
  for (int t = 0; t < 64; ++t) ASSERT_EQ(out[t], n - 1 - t);
  // Still more than the limit set; and another kernel keeps the default.
  EXPECT_THROW(WIOLA_LAUNCH(big_dynamic_shared, dim3(1), dim3(64), bytes + 4, 0)(out.data(), n),
               std::invalid_argument);
  EXPECT_THROW(WIOLA_LAUNCH(other_big_dynamic_shared, dim3(1), dim3(64), bytes, 0)(out.data(), n),
               std::invalid_argument);
  // Beyond the device's maximum the attribute itself is refused.
  EXPECT_NE(cudaFuncSetAttribute(other_big_dynamic_shared,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, 300 * 1024),
            cudaSuccess);
}

// atomicMin / atomicMax on shared ints give the extremes whatever the order;
// uint4 copies 16 aligned bytes at once.
__global__ void extremes_and_vectors(const int* in, int* lo_hi, const uint4* src, uint4* dst) {
  __shared__ int lo, hi;
  if (threadIdx.x == 0) {
    lo = 1 << 30;
    hi = -(1 << 30);
  }
  __syncthreads();
  atomicMin(&lo, in[threadIdx.x]);
  atomicMax(&hi, in[threadIdx.x]);
  __syncthreads();
  if (threadIdx.x == 0) {
    lo_hi[0] = lo;
    lo_hi[1] = hi;
  }
  if (threadIdx.x < 4) dst[threadIdx.x] = src[3 - threadIdx.x];
}

TEST(cudaEmu, AtomicMinMaxAndSixteenByteVectors) {
  std::vector<int> in(96);
  for (int i = 0; i < 96; ++i) in[i] = (i * 37) % 101 - 50;
  std::vector<int> lo_hi(2);
  std::vector<uint4> src(4), dst(4);
  for (unsigned i = 0; i < 4; ++i) src[i] = make_uint4(i, 10 + i, 20 + i, 30 + i);
  WIOLA_LAUNCH(extremes_and_vectors, dim3(1), dim3(96), 0, 0)(in.data(), lo_hi.data(), src.data(),
                                                               dst.data());
  EXPECT_EQ(lo_hi[0], *std::min_element(in.begin(), in.end()));
  EXPECT_EQ(lo_hi[1], *std::max_element(in.begin(), in.end()));
  static_assert(sizeof(uint4) == 16 && alignof(uint4) == 16);
  for (unsigned i = 0; i < 4; ++i) {
    EXPECT_EQ(dst[i].x, 3 - i);
    EXPECT_EQ(dst[i].w, 33 - i);
  }
}

__global__ void bit_ops(const int* in, int* ffs, int* popc) {
  const int t = threadIdx.x;
  ffs[t] = __ffs(in[t]);
  popc[t] = __popc(static_cast<unsigned>(in[t]));
}

TEST(cudaEmu, BitIntrinsicsFollowTheirDefinitions) {
  const std::vector<int> in{0, 1, 2, 12, -1, int(0x80000000u), 0x00f00000, 0x7fffffff};
  const std::vector<int> want_ffs{0, 1, 2, 3, 1, 32, 21, 1}, want_popc{0, 1, 1, 2, 32, 1, 4, 31};
  std::vector<int> ffs(in.size()), popc(in.size());
  WIOLA_LAUNCH(bit_ops, dim3(1), dim3(unsigned(in.size())), 0, 0)(in.data(), ffs.data(),
                                                                   popc.data());
  EXPECT_EQ(ffs, want_ffs);
  EXPECT_EQ(popc, want_popc);
}

TEST(cudaEmu, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(__bfloat162float(__float2bfloat16(1.0f)), 1.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(__bfloat162float(__float2bfloat16(1.0f + 1.0f / 256)), 1.0f);
  // 1 + 3·2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  EXPECT_EQ(__bfloat162float(__float2bfloat16(1.0f + 3.0f / 256)), 1.0f + 1.0f / 64);
  EXPECT_EQ(__bfloat162float(__float2bfloat16(1.0f + 1.5f / 256)), 1.0f + 1.0f / 128);
  EXPECT_TRUE(std::isnan(__bfloat162float(__float2bfloat16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(__bfloat162float(__float2bfloat16(INFINITY))));
}

}  // namespace
