// The register-level tensor-core instructions (backend/cuda/kernels/warp_mma.cuh)
// against the layouts the PTX ISA specifies for them: each test places or
// reads fragment elements by the documented positions, written out here
// independently of the emulation, so a layout the emulation got wrong fails.
// Also cp.async: a copy lands only when its group is waited for.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda_emu.hpp"  // before the kernel source's view of CUDA, as in the emulated build
#include "backend/cuda/kernels/warp_mma.cuh"

namespace {

namespace mma = wiola::cuda::kernels::mma;

std::uint16_t bits(__nv_bfloat16 v) {
  std::uint16_t b;
  std::memcpy(&b, &v, 2);
  return b;
}
__nv_bfloat16 bf(float v) { return __float2bfloat16(v); }

// Fragments built by hand from the documented layouts (no ldmatrix): A
// [16][16] and B [16][8] row-major in global memory, D [16][8] written back
// by the documented accumulator layout.
__global__ void mma_from_documented_fragments(const __nv_bfloat16* A, const __nv_bfloat16* B,
                                              float* D) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  const auto a = [&](int r, int c) { return __bfloat162float(A[r * 16 + c]); };
  const auto b = [&](int k, int n) { return __bfloat162float(B[k * 8 + n]); };
  const std::uint32_t af[4] = {mma::pack_bf16(a(g, 2 * t), a(g, 2 * t + 1)),
                               mma::pack_bf16(a(g + 8, 2 * t), a(g + 8, 2 * t + 1)),
                               mma::pack_bf16(a(g, 2 * t + 8), a(g, 2 * t + 9)),
                               mma::pack_bf16(a(g + 8, 2 * t + 8), a(g + 8, 2 * t + 9))};
  const std::uint32_t b0 = mma::pack_bf16(b(2 * t, g), b(2 * t + 1, g));
  const std::uint32_t b1 = mma::pack_bf16(b(2 * t + 8, g), b(2 * t + 9, g));
  float d[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  mma::mma_bf16(d, af, b0, b1);
  D[g * 8 + 2 * t] = d[0];
  D[g * 8 + 2 * t + 1] = d[1];
  D[(g + 8) * 8 + 2 * t] = d[2];
  D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

TEST(cudaEmuMma, M16n8k16ProductFollowsThePtxFragmentLayouts) {
  std::vector<__nv_bfloat16> A(256), B(128);
  for (int i = 0; i < 256; ++i) A[i] = bf(float((i * 7) % 11) * 0.25f - 1.0f);
  for (int i = 0; i < 128; ++i) B[i] = bf(float((i * 5) % 13) * 0.125f - 0.5f);
  std::vector<float> D(128, -1.0f);
  const wiola::emu::TensorCoreTraffic before = wiola::emu::tensor_core_traffic();
  WIOLA_LAUNCH(mma_from_documented_fragments, dim3(1), dim3(32), 0, 0)(A.data(), B.data(),
                                                                       D.data());
  EXPECT_EQ(wiola::emu::tensor_core_traffic().mma_flops - before.mma_flops, 2 * 16 * 8 * 16);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) {
      // The accumulator's initial value as the lanes set it: c0..c3 = 1..4.
      float want = float(1 + (r >= 8 ? 2 : 0) + n % 2);
      for (int k = 0; k < 16; ++k)
        want += __bfloat162float(A[r * 16 + k]) * __bfloat162float(B[k * 8 + n]);
      EXPECT_FLOAT_EQ(D[r * 8 + n], want) << r << "," << n;
    }
}

// Each lane gives the address of row lane % 8 of matrix lane / 8 of a
// [32][8] array (matrix m: rows 8m..8m+7); reports its four registers.
__global__ void ldmatrix_rows(const __nv_bfloat16* M, std::uint32_t* plain, std::uint32_t* trans) {
  __shared__ __nv_bfloat16 s[32 * 8];
  const int lane = threadIdx.x;
  for (int i = lane; i < 256; i += 32) s[i] = M[i];
  __syncwarp();
  std::uint32_t r[4], rt[4];
  mma::ldmatrix_x4(r, s + lane * 8);
  mma::ldmatrix_x4_trans(rt, s + lane * 8);
  for (int m = 0; m < 4; ++m) {
    plain[lane * 4 + m] = r[m];
    trans[lane * 4 + m] = rt[m];
  }
}

TEST(cudaEmuMma, LdmatrixGivesEachLaneItsDocumentedElements) {
  std::vector<__nv_bfloat16> M(256);
  for (int i = 0; i < 256; ++i) M[i] = bf(float(i));  // exact in bf16 up to 256
  std::vector<std::uint32_t> plain(128), trans(128);
  const wiola::emu::TensorCoreTraffic before = wiola::emu::tensor_core_traffic();
  WIOLA_LAUNCH(ldmatrix_rows, dim3(1), dim3(32), 0, 0)(M.data(), plain.data(), trans.data());
  EXPECT_EQ(wiola::emu::tensor_core_traffic().fragment_bytes - before.fragment_bytes, 2 * 512);
  const auto el = [&](int m, int i, int j) { return std::uint32_t(bits(M[(8 * m + i) * 8 + j])); };
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int m = 0; m < 4; ++m) {
      EXPECT_EQ(plain[lane * 4 + m], el(m, g, 2 * t) | el(m, g, 2 * t + 1) << 16)
          << "lane " << lane << " matrix " << m;
      EXPECT_EQ(trans[lane * 4 + m], el(m, 2 * t, g) | el(m, 2 * t + 1, g) << 16)
          << "lane " << lane << " matrix " << m << " (trans)";
    }
  }
}

// Two groups of 16-byte copies; reads before and between the waits.
__global__ void async_copies(const uint4* src, int* seen) {
  __shared__ uint4 s[2];
  if (threadIdx.x != 0) return;
  s[0] = make_uint4(7, 7, 7, 7);
  s[1] = make_uint4(7, 7, 7, 7);
  mma::cp_async16(&s[0], &src[0], true);
  mma::cp_async_commit();
  mma::cp_async16(&s[1], &src[1], false);  // zero fill
  mma::cp_async_commit();
  seen[0] = int(s[0].x);  // not landed yet here
  mma::cp_async_wait<1>();
  seen[1] = int(s[0].x);
  seen[2] = int(s[1].x);  // the second group is still in flight
  mma::cp_async_wait<0>();
  seen[3] = int(s[1].x);
}

TEST(cudaEmuMma, CpAsyncLandsWhenItsGroupIsWaitedFor) {
  const std::vector<uint4> src = {make_uint4(5, 5, 5, 5), make_uint4(9, 9, 9, 9)};
  std::vector<int> seen(4, -1);
  const wiola::emu::TensorCoreTraffic before = wiola::emu::tensor_core_traffic();
  WIOLA_LAUNCH(async_copies, dim3(1), dim3(32), 0, 0)(src.data(), seen.data());
  EXPECT_EQ(seen, (std::vector<int>{7, 5, 7, 0}));
  EXPECT_EQ(wiola::emu::tensor_core_traffic().staged_bytes - before.staged_bytes, 32);
}

}  // namespace
