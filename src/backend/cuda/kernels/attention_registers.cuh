#pragma once
// Per-warp attention products with scores, probabilities and the output
// accumulator in registers, in the accumulator layout of mma.sync m16n8k16
// (warp_mma.cuh). A warp owns R blocks of 16 rows; with g = lane / 4,
// t = lane % 4 a lane holds rows g and g + 8 of each block, and of every
// 8-column slice j the columns 8j + 2t and 8j + 2t + 1:
//   Scores  s[r][j][e], j < 8 (64 keys):       row 16r + g + 8 (e / 2), key 8j + 2t + e % 2;
//   Output  o[r][n][e], n < DHP / 8 (columns): row 16r + g + 8 (e / 2), column 8n + 2t + e % 2.
// A row's values are spread over the four lanes of its quad (lanes 4g..4g+3),
// so row-wise reductions take two shuffles.
//
// The products:
//   nt:             s = A Bᵀ, A 16R rows x DHP of a shared tile, B 64 rows;
//                   each B fragment read once for all R blocks (the
//                   forward's 32 query rows a warp);
//   accumulate_pv:  o += P V, P in the score layout (16R x 64), V a 64-row
//                   shared tile (the backward's Pᵀ dO and dSᵀ Q alike);
//   accumulate_tn:  o += Aᵀ B over a slice of columns, A a shared [64][lda]
//                   array read transposed (the backward's dS K from dSᵀ).
// bf16 (RegisterTiles<bf16>): tensor cores. Tiles are read with ldmatrix
// (transposed where the product needs it); P goes from the score registers
// straight into the A fragments of P·V (the accumulator layout of two
// adjacent 8-key slices is the A layout of one 16-key step), never through
// shared memory.
// fp32 (RegisterTiles<float>, for checking): the same layout computed on the
// CUDA cores from the shared tiles, with P passed through a per-warp shared
// scratch.
// Tiles are shared arrays of row stride DHP + 8 elements (attention_common.cuh).
#include <cstdint>

#include "backend/cuda/kernels/attention_common.cuh"
#include "backend/cuda/kernels/warp_mma.cuh"

namespace wiola::cuda::kernels::attn {

constexpr int kScoreSlices = kBK / 8;  // 8-key slices of a 64-key tile

template <class T, int DHP, bool TC = kTensorCores<T>>
struct RegisterTiles;

template <int DHP>
struct RegisterTiles<__nv_bfloat16, DHP, true> {
  using T = __nv_bfloat16;
  static constexpr int kLd = DHP + 8;

  // Lane l's row address for ldmatrix_x4 of the 16 x 16 block at (r0, c0):
  // matrix l / 8 at rows r0 + 8 (m % 2) when `rows_first`, else columns.
  __device__ static const T* quad_row(const T* tile, int r0, int c0, bool rows_first) {
    const int lane = threadIdx.x % 32, m = lane / 8, i = lane % 8;
    const int dr = rows_first ? (m % 2) * 8 : (m / 2) * 8;
    const int dc = rows_first ? (m / 2) * 8 : (m % 2) * 8;
    return tile + (r0 + dr + i) * kLd + c0 + dc;
  }

  // An x4 load holds the B fragments of two adjacent 8-column slices:
  // d0 += a·(b[0], b[1]), d1 += a·(b[2], b[3]).
  __device__ static void mma_slices(float (&d0)[4], float (&d1)[4], const std::uint32_t (&a)[4],
                                    const std::uint32_t (&b)[4]) {
    mma::mma_bf16(d0, a, b[0], b[1]);
    mma::mma_bf16(d1, a, b[2], b[3]);
  }

  // s[r] = A_r Bᵀ for R blocks of 16 rows: A_r rows 16r.. of a shared tile
  // from `a_rows` on, B a 64-row shared tile. Each B fragment serves all R.
  template <int R>
  __device__ static void nt(float (&s)[R][kScoreSlices][4], const T* a_rows, const T* b_tile) {
    WIOLA_UNROLL
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < kScoreSlices; ++j)
        for (int e = 0; e < 4; ++e) s[r][j][e] = 0.0f;
    WIOLA_UNROLL
    for (int ks = 0; ks < DHP / 16; ++ks) {
      std::uint32_t af[R][4];
      WIOLA_UNROLL
      for (int r = 0; r < R; ++r) mma::ldmatrix_x4(af[r], quad_row(a_rows, 16 * r, 16 * ks, true));
      WIOLA_UNROLL
      for (int jj = 0; jj < kScoreSlices / 2; ++jj) {
        // Keys 16jj.. (+8 in matrices 2, 3), columns 16ks.. (+8 in 1, 3): the
        // B fragments of slices 2jj and 2jj + 1.
        std::uint32_t b[4];
        mma::ldmatrix_x4(b, quad_row(b_tile, 16 * jj, 16 * ks, false));
        WIOLA_UNROLL
        for (int r = 0; r < R; ++r) mma_slices(s[r][2 * jj], s[r][2 * jj + 1], af[r], b);
      }
    }
  }

  // o[r] += P_r V, P_r in the score layout (rounded to bf16 here), V a
  // 64-row shared tile. Each V fragment serves all R.
  template <int R>
  __device__ static void accumulate_pv(float (&o)[R][DHP / 8][4],
                                       const float (&p)[R][kScoreSlices][4], const T* v_tile,
                                       float*) {
    WIOLA_UNROLL
    for (int kk = 0; kk < kScoreSlices / 2; ++kk) {
      std::uint32_t a[R][4];
      WIOLA_UNROLL
      for (int r = 0; r < R; ++r) {
        a[r][0] = mma::pack_bf16(p[r][2 * kk][0], p[r][2 * kk][1]);
        a[r][1] = mma::pack_bf16(p[r][2 * kk][2], p[r][2 * kk][3]);
        a[r][2] = mma::pack_bf16(p[r][2 * kk + 1][0], p[r][2 * kk + 1][1]);
        a[r][3] = mma::pack_bf16(p[r][2 * kk + 1][2], p[r][2 * kk + 1][3]);
      }
      WIOLA_UNROLL
      for (int dd = 0; dd < DHP / 16; ++dd) {
        // Keys 16kk.. (+8 in matrices 1, 3), columns 16dd.. (+8 in 2, 3),
        // transposed: the B fragments of column slices 2dd and 2dd + 1.
        std::uint32_t b[4];
        mma::ldmatrix_x4_trans(b, quad_row(v_tile, 16 * kk, 16 * dd, true));
        WIOLA_UNROLL
        for (int r = 0; r < R; ++r) mma_slices(o[r][2 * dd], o[r][2 * dd + 1], a[r], b);
      }
    }
  }

  // o += Aᵀ B over COLS columns from c0: A a shared [64][lda] array read
  // transposed (row r of Aᵀ is column m0 + r of A), B a 64-row shared tile.
  template <int COLS>
  __device__ static void accumulate_tn(float (&o)[COLS / 8][4], const T* a, int lda, int m0,
                                       const T* b_tile, int c0) {
    const int lane = threadIdx.x % 32, m = lane / 8, i = lane % 8;
    WIOLA_UNROLL
    for (int kk = 0; kk < kBK / 16; ++kk) {
      // Matrix m: rows (m % 2) * 8 of Aᵀ (columns of A), its columns (A's
      // rows) (m / 2) * 8 on: transposed, the A fragments.
      std::uint32_t af[4];
      mma::ldmatrix_x4_trans(af, a + (16 * kk + (m / 2) * 8 + i) * lda + m0 + (m % 2) * 8);
      WIOLA_UNROLL
      for (int dd = 0; dd < COLS / 16; ++dd) {
        std::uint32_t b[4];
        mma::ldmatrix_x4_trans(b, quad_row(b_tile, 16 * kk, c0 + 16 * dd, true));
        mma_slices(o[2 * dd], o[2 * dd + 1], af, b);
      }
    }
  }
};

template <int DHP>
struct RegisterTiles<float, DHP, false> {
  static constexpr int kLd = DHP + 8;
  static constexpr int kLdp = kBK + 4;  // the P scratch's row stride

  template <int R>
  __device__ static void nt(float (&s)[R][kScoreSlices][4], const float* a_rows,
                            const float* b_tile) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < kScoreSlices; ++j)
        for (int e = 0; e < 4; ++e) {
          const float* ar = a_rows + (16 * r + g + 8 * (e / 2)) * kLd;
          const float* br = b_tile + (8 * j + 2 * t + e % 2) * kLd;
          float acc = 0.0f;
          for (int d = 0; d < DHP; ++d) acc += ar[d] * br[d];
          s[r][j][e] = acc;
        }
  }

  // `scratch`: the warp's shared fp32 [16][kLdp].
  template <int R>
  __device__ static void accumulate_pv(float (&o)[R][DHP / 8][4],
                                       const float (&p)[R][kScoreSlices][4], const float* v_tile,
                                       float* scratch) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < kScoreSlices; ++j)
        for (int e = 0; e < 4; ++e)
          scratch[(g + 8 * (e / 2)) * kLdp + 8 * j + 2 * t + e % 2] = p[r][j][e];
      __syncwarp();
      for (int n = 0; n < DHP / 8; ++n)
        for (int e = 0; e < 4; ++e) {
          const float* pr = scratch + (g + 8 * (e / 2)) * kLdp;
          const int col = 8 * n + 2 * t + e % 2;
          float acc = o[r][n][e];
          for (int k = 0; k < kBK; ++k) acc += pr[k] * v_tile[k * kLd + col];
          o[r][n][e] = acc;
        }
      __syncwarp();  // every lane is done with the scratch
    }
  }

  template <int COLS>
  __device__ static void accumulate_tn(float (&o)[COLS / 8][4], const float* a, int lda, int m0,
                                       const float* b_tile, int c0) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    for (int n = 0; n < COLS / 8; ++n)
      for (int e = 0; e < 4; ++e) {
        const int row = m0 + g + 8 * (e / 2), col = c0 + 8 * n + 2 * t + e % 2;
        float acc = o[n][e];
        for (int k = 0; k < kBK; ++k) acc += a[k * lda + row] * b_tile[k * kLd + col];
        o[n][e] = acc;
      }
  }
};

// Sum and max over the quad (four lanes) that holds a row.
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(kFull, v, 1);
  return v + __shfl_xor_sync(kFull, v, 2);
}
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(kFull, v, 1));
  return fmaxf(v, __shfl_xor_sync(kFull, v, 2));
}

}  // namespace wiola::cuda::kernels::attn
