#pragma once
// Tensor-core products on registers (sm_80 and later), the PTX instructions
// behind FlashAttention-2-class kernels:
//   mma_bf16:    D[16][8] += A[16][16] · B[16][8], bf16 in, fp32 accumulate
//                (mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32);
//   ldmatrix_x4: four 8 x 8 matrices of 16-bit elements from shared memory
//                into fragments, as stored or transposed (.trans);
//   cp_async16:  16 bytes global -> shared without passing through
//                registers, completed by cp_async_wait.
// Unlike wmma, PTX fixes which elements each lane holds, so kernels may
// compute on fragment elements by position. With g = lane / 4 and
// t = lane % 4:
//   A (4 registers of 2 bf16): a0 = A[g][2t, 2t+1],   a1 = A[g+8][2t, 2t+1],
//                              a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9];
//   B (2 registers):           b0 = B[2t, 2t+1][g],   b1 = B[2t+8, 2t+9][g];
//   C, D (4 fp32):             c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1].
// The lower half of a register holds the element with the smaller index.
// ldmatrix_x4: lane l gives the address of row l % 8 of matrix l / 8; lane
// (g, t) receives in register m the elements [g][2t, 2t+1] of matrix m
// (transposed: [2t, 2t+1][g]). The emulation (tests/cuda_emu) implements the
// same layouts, so a kernel that mixes them up fails there.
#include <cstdint>
#include <cstring>

#include "backend/cuda/cuda_compat.hpp"

namespace wiola::cuda::kernels::mma {

// Two floats as bf16 (round to nearest even) in one register, `lo` in the
// lower half.
__device__ __forceinline__ std::uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat16 l = __float2bfloat16(lo), h = __float2bfloat16(hi);
  std::uint16_t lb, hb;
  std::memcpy(&lb, &l, 2);
  std::memcpy(&hb, &h, 2);
  return std::uint32_t(lb) | (std::uint32_t(hb) << 16);
}

#if defined(WIOLA_CUDA_EMULATION)

__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4],
                                         std::uint32_t b0, std::uint32_t b1) {
  ::wiola::emu::mma_m16n8k16_bf16(d, a, b0, b1);
}
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* row) {
  ::wiola::emu::ldmatrix_x4(r, row, false);
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row) {
  ::wiola::emu::ldmatrix_x4(r, row, true);
}
// fill = false: the 16 bytes become zeros and `src` is not read.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool fill) {
  ::wiola::emu::cp_async16(dst, src, fill);
}
__device__ __forceinline__ void cp_async_commit() { ::wiola::emu::cp_async_commit(); }
// Waits until at most `Pending` of this thread's committed groups are in
// flight. The copies become visible to other threads after a barrier.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  ::wiola::emu::cp_async_wait(Pending);
}

#else

__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4],
                                         std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool fill) {
  // src-size 0 zero-fills the destination without reading the source.
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
               "l"(src), "r"(fill ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

#endif

}  // namespace wiola::cuda::kernels::mma
