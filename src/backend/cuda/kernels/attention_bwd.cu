// GCLA attention backward, FlashAttention-2 style: the self-attention
// probabilities are recomputed from the saved lse_self, never stored.
//
// With dO_self = (1 − β) dO and dO_ctx = β dO:
//   D_i     = dO_self,i · O_self,i                      (prep kernel)
//   P_ij    = exp(q_i·k_j / √dh − lse_i)  over visible (i, j)
//   dS_ij   = P_ij ((1 − β) dO_i·v_j − D_i)
//   dq_i    = Σ_j dS_ij k_j / √dh  +  Σ_c coef_k[i,c] ctx_k[c]
//   dk_j    = Σ_i dS_ij q_i / √dh,   dv_j = (1 − β) Σ_i P_ij dO_i
//   context: w_c = exp(q·ctx_k[c] / √dh − lse_ctx), ds_c = β w_c (dO·ctx_v[c] − dO·O_ctx),
//            coef_k = ds_c / √dh, coef_v = β w_c (dQ kernel; the context
//            rows' gradients are gathered from them in attention_ctx.cu)
//   dβ      = Σ dO · (O_ctx − O_self), dφ = dβ β (1 − β)  (per-row partials in prep)
//
// Five tile products per (query tile, key tile), as FlashAttention-2: Sᵀ,
// dPᵀ, dV += Pᵀ dO, dK += dSᵀ Q and dQ += dS K, all in the dK/dV kernel. dQ
// is summed over the key tiles in fp32 (dq_acc) in key tile order, each
// block waiting for its turn at a query tile, so the result has the same
// bits on every run (FlashAttention-2's atomics do not).
//
// Kernels, in launch order:
//   attention_bwd_prep  three kinds of blocks in one launch (none reads what
//     another kind writes):
//     - one warp per query row: with the output gate, dO and the gate
//       logits' gradient from dY first (the elementwise op's arithmetic);
//       then D for every head (lanes over dh, a fixed shuffle tree) and the
//       row's dβ partial;
//     - after those, one block per (query tile, sequence): the 64-row query
//       tile's largest key prefix and extra-key range, so the dK/dV kernel
//       knows which query tiles can see its keys, and the tile's dQ turns
//       set to 0;
//     - with context, last, the context rows' bucket counts and their scan
//       (attention_buckets.cuh: the dK/dV and dQ kernels' extra columns of
//       blocks fill and rank them, for the gather in attention_ctx.cu).
//   attention_bwd_dkdv  grid (key tiles, Hkv, B), 128 threads. The block keeps
//     its 64 x DHP K and V tiles in shared memory and loops over the query
//     tiles that can see it and the query heads of its group, staging Q, dO,
//     lse and D of each (cp.async). Warp w owns key rows [16w, 16w + 16), in
//     registers (attention_registers.cuh: mma.sync m16n8k16 in bf16):
//       Sᵀ = K_w Qᵀ, P; dV_w += Pᵀ dO; dPᵀ = V_w dOᵀ, dSᵀ (also to shared
//       memory, rounded to the compute type); dK_w += dSᵀ Q;
//     then, in the block's turn at the query tile, warp w forms dQ of query
//     rows [16w, 16w + 16) from the whole dSᵀ tile and K, and adds it to
//     dq_acc (the first key tile stores). Each dK/dV row is written by one
//     block. K rows that no query of the tile sees take part in dS K as zeros
//     (they may hold anything). 95 KiB of shared memory per block at dh = 128
//     in bf16 (two blocks per H100 SM), 206 KiB in fp32 (sm_90 only).
//   attention_bwd_dq  grid (query tiles, H, B), 128 threads: dQ from dq_acc
//     and the context term, the context coefficients (lane pair per row,
//     reading its rows of Q and dO with context).
//   With SRPE (AttentionRotary), Q is the rotated one, K is rotated as it is
//   staged (as in the forward), and the dQ and dK epilogues round each row
//   to the compute type, then rotate it back (write_rotated_back): srpe_bwd's
//   bits without its two passes.
#include <vector>

#include "backend/cuda/kernels/attention.hpp"
#include "backend/cuda/kernels/attention_buckets.cuh"
#include "backend/cuda/kernels/attention_common.cuh"
#include "backend/cuda/kernels/attention_registers.cuh"
#include "backend/cuda/kernels/memory.hpp"

namespace wiola::cuda::kernels {

namespace {

using namespace attn;

template <class T>
struct Bwd {
  const T* d_o;
  std::int64_t lddo;
  const T* o_self;
  std::int64_t ldos;
  const T* o_ctx;
  std::int64_t ldoc;
  const float* lse_self;
  std::int64_t ldls;
  const float* lse_ctx;
  std::int64_t ldlc;
  T* dq;
  std::int64_t lddq;
  T* dk;
  std::int64_t lddk;
  T* dv;
  std::int64_t lddv;
  float* dself;      // [B*T, H]: D of every query row and head
  float* dbeta_row;  // [B*T]: Σ dO·(O_ctx − O_self) of the row
  float* coef_k;     // [B*T, H, n_ctx]
  float* coef_v;     // [B*T, H, n_ctx]
  int* qstats;       // [B, query tiles, 3]: largest prefix, smallest and largest extra
  float* dq_acc;     // [B*T, H*dh]: Σ dS K over the key tiles, in key tile order
  std::int64_t ldacc;
  int* dq_turn;      // [B, H, query tiles]: how many key tiles have added to the tile's dQ
  // The output gate Y = σ(G) ⊙ O (null gate_dy: none): prep writes d_o_out
  // (the tensor d_o reads) and dglog from dY.
  const T* glog;
  std::int64_t ldg;
  const T* o;
  std::int64_t ldo;
  const T* gate_dy;
  std::int64_t ldgy;
  T* dglog;
  std::int64_t lddg;
  T* d_o_out;
  // SRPE (rot.on): dQ and dK rotated back (its transpose) as they are written.
  AttnRotary rot;
  // With context (bk.rows > 0), the context rows' reader buckets, built by
  // the three kernels' extra blocks (attention_buckets.cuh).
  Buckets bk;
};

// Writes a warp's 16-row fp32 tile `stage` (row stride ld) to rows [0, rows)
// of dst (one head) as the compute type, the values first rounded to it in
// place; with SRPE, the rounded rows rotated back (sign −1) at the positions
// from row `first` on, as srpe_bwd would rotate the stored gradient. Lanes
// along the row; the whole warp takes part.
template <class T>
__device__ void write_rotated_back(float* stage, int ld, int rows, int dh, T* dst,
                                   std::int64_t ld_dst, const AttnRotary& rot,
                                   const RotaryTables& tab, std::int64_t first) {
  const int lane = threadIdx.x % 32, half = dh / 2;
  if (!rot.on) {
    for (int e = lane; e < rows * dh; e += 32)
      dst[(e / dh) * ld_dst + e % dh] = from_float<T>(stage[(e / dh) * ld + e % dh]);
    return;
  }
  for (int e = lane; e < rows * dh; e += 32) {
    float& x = stage[(e / dh) * ld + e % dh];
    x = to_float(from_float<T>(x));
  }
  __syncwarp();
  for (int e = lane; e < rows * half; e += 32) {
    const int rr = e / half, j = e % half;
    float c, sn, ya, yb;
    rotary_coefficients(tab, first + rr, j, -1.0f, c, sn);
    int ca, cb;
    rotary_columns(j, half, tab.interleaved, ca, cb);
    rotate_pair(stage[rr * ld + ca], stage[rr * ld + cb], c, sn, ya, yb);
    dst[rr * ld_dst + ca] = from_float<T>(ya);
    dst[rr * ld_dst + cb] = from_float<T>(yb);
  }
}

// ---- query tile statistics and D ---------------------------------------------------

template <class T>
__global__ void __launch_bounds__(kTileThreads)
    attention_bwd_prep(Args<T> a, Bwd<T> w, unsigned row_blocks, int n_qtiles) {
  const unsigned tile_blocks = unsigned(a.batch * n_qtiles);
  if (blockIdx.x >= row_blocks + tile_blocks) {  // the buckets' counts (block-uniform)
    bucket_count(w.bk, int(blockIdx.x - row_blocks - tile_blocks),
                 int(gridDim.x - row_blocks - tile_blocks));
    return;
  }
  if (blockIdx.x >= row_blocks) {  // a query tile's statistics (block-uniform: barriers are safe)
    __shared__ int pre[kBQ], ext[kBQ], stat[4];
    const int tile = int(blockIdx.x - row_blocks), qt = tile % n_qtiles, b = tile / n_qtiles;
    load_query_index(a, b, qt * kBQ, pre, ext, stat);
    if (threadIdx.x < 3)
      w.qstats[(std::int64_t(b) * n_qtiles + qt) * 3 + threadIdx.x] = stat[threadIdx.x];
    for (int h = threadIdx.x; h < a.heads; h += blockDim.x)
      w.dq_turn[(std::int64_t(b) * a.heads + h) * n_qtiles + qt] = 0;
    return;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t n = std::int64_t(a.batch) * a.seq;
  const std::int64_t i = std::int64_t(blockIdx.x) * kWarps + warp;
  if (i >= n) return;  // the whole warp
  const int b = int(i / a.seq), t = int(i % a.seq), dh = a.head_dim;
  const bool valid = t < valid_queries(a, b);
  const float beta = attention_beta(a);
  float dbeta = 0.0f;
  for (int h = 0; h < a.heads; ++h) {
    if (w.gate_dy) {  // every row, padding included: the outputs are written whole
      const T* gl = w.glog + i * w.ldg + h * dh;
      const T* go = w.o + i * w.ldo + h * dh;
      const T* gdy = w.gate_dy + i * w.ldgy + h * dh;
      T* gdg = w.dglog + i * w.lddg + h * dh;
      T* gdo = w.d_o_out + i * w.lddo + h * dh;
      for (int d = lane; d < dh; d += 32) {
        float dg, dx;
        gate_bwd(to_float(gl[d]), to_float(go[d]), to_float(gdy[d]), dg, dx);
        gdg[d] = from_float<T>(dg);
        gdo[d] = from_float<T>(dx);  // read back below by the same lane
      }
    }
    float part = 0.0f;
    if (valid) {
      const T* g = w.d_o + i * w.lddo + h * dh;
      const T* os = w.o_self + i * w.ldos + h * dh;
      const T* oc = a.n_ctx > 0 ? w.o_ctx + i * w.ldoc + h * dh : nullptr;
      for (int d = lane; d < dh; d += 32) {
        const float gd = to_float(g[d]), sd = to_float(os[d]);
        part += gd * sd;
        if (oc) dbeta += gd * (to_float(oc[d]) - sd);
      }
    }
    part = warp_sum(part);
    if (lane == 0) w.dself[i * a.heads + h] = (1.0f - beta) * part;
  }
  dbeta = warp_sum(dbeta);
  if (lane == 0) w.dbeta_row[i] = dbeta;
}

// ---- dK, dV, and dQ's terms ---------------------------------------------------------

template <class T, int DHP>
struct DkdvSmem {
  static constexpr int kLdt = DHP + 8;  // K, V, Q, dO tiles (T)
  static constexpr int kLdd = kBQ + 8;  // dSᵀ [key][query] (T), the dQ product's operand
  static constexpr int kLdp = kBK + 4;  // per-warp fp32 scratch of the fp32 products
  static constexpr int kLde = DHP + 4;  // epilogue staging (fp32), over the Q, dO, dSᵀ tiles
  static constexpr std::size_t tile = sizeof(T) * kBK * kLdt;
  static constexpr std::size_t k = 0;
  static constexpr std::size_t v = align128(k + tile);
  static constexpr std::size_t q = align128(v + tile);
  static constexpr std::size_t d_o = align128(q + tile);
  static constexpr std::size_t dst = align128(d_o + tile);
  static constexpr std::size_t kz = align128(dst + sizeof(T) * kBK * kLdd);  // K, unseen rows 0
  static constexpr std::size_t scratch = align128(kz + tile);
  static constexpr std::size_t scratch_end =
      scratch + (kTensorCores<T> ? 0 : sizeof(float) * kWarps * 16 * kLdp);
  static constexpr std::size_t stage_end = q + sizeof(float) * kWarps * 16 * kLde;
  static constexpr std::size_t lse = align128(scratch_end > stage_end ? scratch_end : stage_end);
  static constexpr std::size_t dd = lse + sizeof(float) * kBQ;
  static constexpr std::size_t pre = dd + sizeof(float) * kBQ;
  static constexpr std::size_t ext = pre + sizeof(int) * kBQ;
  static constexpr std::size_t stat = ext + sizeof(int) * kBQ;
  static constexpr std::size_t used = stat + sizeof(int) * 4;
  static constexpr std::size_t bytes = align128(used + kBK);
};

// Columns of dQ a warp forms at a time (the accumulator's registers).
template <int DHP>
inline constexpr int kDqChunk = DHP % 64 == 0 ? 64 : DHP % 32 == 0 ? 32 : 16;

template <class T, int DHP>
__global__ void __launch_bounds__(kTileThreads) attention_bwd_dkdv(Args<T> a, Bwd<T> w) {
  using L = DkdvSmem<T, DHP>;
  using RT = RegisterTiles<T, DHP>;
  constexpr int kChunk = kDqChunk<DHP>;
  WIOLA_DYNAMIC_SHARED(unsigned char, smem);
  T* ks = reinterpret_cast<T*>(smem + L::k);
  T* vs = reinterpret_cast<T*>(smem + L::v);
  T* qs = reinterpret_cast<T*>(smem + L::q);
  T* dos = reinterpret_cast<T*>(smem + L::d_o);
  T* dst = reinterpret_cast<T*>(smem + L::dst);
  T* kz = reinterpret_cast<T*>(smem + L::kz);
  float* lse = reinterpret_cast<float*>(smem + L::lse);
  float* dd = reinterpret_cast<float*>(smem + L::dd);
  int* pre = reinterpret_cast<int*>(smem + L::pre);
  int* ext = reinterpret_cast<int*>(smem + L::ext);
  int* stat = reinterpret_cast<int*>(smem + L::stat);
  unsigned char* used = smem + L::used;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* scratch = reinterpret_cast<float*>(smem + L::scratch) + warp * 16 * L::kLdp;

  const int n_ktiles = (a.seq + kBK - 1) / kBK;
  if (int(blockIdx.x) >= n_ktiles) {  // the buckets' slots (block-uniform)
    bucket_fill(w.bk, extra_block(n_ktiles));
    return;
  }
  const int kt = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  const int S = a.seq, dh = a.head_dim, k0 = kt * kBK;
  const int n_qtiles = (S + kBQ - 1) / kBQ;
  const int nq = valid_queries(a, b);
  const std::int64_t row0 = std::int64_t(b) * S;
  const float beta = attention_beta(a);

  const int krows = clampi(S - k0, 0, kBK);
  load_tile_async<T, DHP, kBK>(ks, a.k + (row0 + k0) * a.ldk + g * dh, a.ldk, krows, dh, a.vec,
                               nullptr);
  load_tile_async<T, DHP, kBK>(vs, a.v + (row0 + k0) * a.ldv + g * dh, a.ldv, krows, dh, a.vec,
                               nullptr);
  mma::cp_async_commit();
  mma::cp_async_wait<0>();
  if (w.rot.on) {  // K taken before SRPE: srpe_fwd's bits, in shared memory
    __syncthreads();
    rotate_tile<T, DHP>(ks, krows, dh, w.rot.kv, row0 + k0, nullptr);
  }  // the loop's first barrier comes before K is read

  // Lane (g4, t4) holds key rows g4 and g4 + 8 of the warp's 16, in Sᵀ's
  // rows (attention_registers.cuh); its columns are query rows of the tile.
  const int g4 = lane / 4, t4 = lane % 4;
  const int key[2] = {k0 + warp * 16 + g4, k0 + warp * 16 + g4 + 8};
  float dk[1][DHP / 8][4], dv[1][DHP / 8][4];  // one block of 16 rows a warp
  WIOLA_UNROLL
  for (int n = 0; n < DHP / 8; ++n)
    for (int e = 0; e < 4; ++e) dk[0][n][e] = dv[0][n][e] = 0.0f;

  for (int qt = 0; qt < n_qtiles; ++qt) {
    const int* st = w.qstats + (std::int64_t(b) * n_qtiles + qt) * 3;
    if (!visits(st, kt)) continue;
    // This key tile's turn at the query tile's dQ: the key tiles before it
    // that see the tile add first.
    int turn = 0;
    for (int j = 0; j < kt; ++j) turn += visits(st, j) ? 1 : 0;
    const int q0 = qt * kBQ, qrows = clampi(nq - q0, 0, kBQ);
    __syncthreads();  // the previous tile's index and K for dQ are no longer read
    load_query_index(a, b, q0, pre, ext, stat);
    // dQ multiplies K rows by dS, zero where the tile's queries do not see
    // the key; a key row nobody sees may hold anything (0 · NaN would poison
    // dQ), so those products take K with such rows zero.
    mark_used_keys(k0, stat, ext, used);
    bool all_used = true;
    for (int j = 0; j < krows; ++j) all_used = all_used && used[j] != 0;
    const T* k_for_dq = ks;
    if (!all_used) {  // the staged K again, unseen rows zero
      load_tile<T, DHP, kBK>(kz, ks, L::kLdt, krows, dh, true, used);
      k_for_dq = kz;  // the head loop's barrier comes before it is read
    }
    for (int h = g; h < a.heads; h += a.kv_heads) {
      __syncthreads();  // the previous head's Q, dO, lse, D and dSᵀ are consumed
      load_tile_async<T, DHP, kBQ>(qs, a.q + (row0 + q0) * a.ldq + h * dh, a.ldq, qrows, dh,
                                   a.vec, nullptr);
      load_tile_async<T, DHP, kBQ>(dos, w.d_o + (row0 + q0) * w.lddo + h * dh, w.lddo, qrows, dh,
                                   a.vec, nullptr);
      mma::cp_async_commit();
      for (int c = threadIdx.x; c < kBQ; c += blockDim.x) {
        const std::int64_t i = row0 + q0 + c;
        lse[c] = c < qrows ? w.lse_self[i * w.ldls + h] : 0.0f;
        dd[c] = c < qrows ? w.dself[i * a.heads + h] : 0.0f;
      }
      mma::cp_async_wait<0>();
      __syncthreads();

      // P, then dV += Pᵀ dO before dPᵀ is formed: fewer registers live at once.
      float p[1][kScoreSlices][4], ds[1][kScoreSlices][4];
      RT::nt(p, ks + warp * 16 * L::kLdt, qs);  // Sᵀ
      WIOLA_UNROLL
      for (int j = 0; j < kScoreSlices; ++j)
        for (int e = 0; e < 4; ++e) {
          const int c = 8 * j + 2 * t4 + e % 2, kr = key[e / 2];
          const bool vis = kr < pre[c] || kr == ext[c];
          p[0][j][e] = vis ? expf(p[0][j][e] * a.scale - lse[c]) : 0.0f;
        }
      RT::accumulate_pv(dv, p, dos, scratch);     // dV += Pᵀ dO
      RT::nt(ds, vs + warp * 16 * L::kLdt, dos);  // dPᵀ / (1 − β)
      WIOLA_UNROLL
      for (int j = 0; j < kScoreSlices; ++j)
        for (int e = 0; e < 4; ++e) {
          // P is 0 where the key is not seen: dS is then 0, selected, never a product.
          const int c = 8 * j + 2 * t4 + e % 2;
          const float pe = p[0][j][e];
          ds[0][j][e] = pe != 0.0f ? pe * ((1.0f - beta) * ds[0][j][e] - dd[c]) : 0.0f;
          dst[(warp * 16 + g4 + 8 * (e / 2)) * L::kLdd + c] = from_float<T>(ds[0][j][e]);
        }
      RT::accumulate_pv(dk, ds, qs, scratch);  // dK += dSᵀ Q
      __syncthreads();  // every warp's rows of dSᵀ

      // dQ += dS K for the tile's query rows (warp w: rows 16w..16w+15), in
      // this key tile's turn: the same order of additions on every run.
      int* turn_of = w.dq_turn + (std::int64_t(b) * a.heads + h) * n_qtiles + qt;
      if (threadIdx.x == 0) wait_turn(turn_of, turn);
      __syncthreads();
      WIOLA_UNROLL
      for (int c0 = 0; c0 < DHP; c0 += kChunk) {
        float dq[kChunk / 8][4];
        for (int n = 0; n < kChunk / 8; ++n)
          for (int e = 0; e < 4; ++e) dq[n][e] = 0.0f;
        RT::template accumulate_tn<kChunk>(dq, dst, L::kLdd, warp * 16, k_for_dq, c0);
        for (int n = 0; n < kChunk / 8; ++n)
          for (int e = 0; e < 4; ++e) {
            const int t = q0 + warp * 16 + g4 + 8 * (e / 2), col = c0 + 8 * n + 2 * t4 + e % 2;
            if (t >= S || col >= dh) continue;
            float* x = w.dq_acc + (row0 + t) * w.ldacc + h * dh + col;
            __stcg(x, turn == 0 ? dq[n][e] : __ldcg(x) + dq[n][e]);
          }
      }
      __threadfence();
      __syncthreads();
      if (threadIdx.x == 0) pass_turn(turn_of);
    }
  }

  // Epilogue: stage each accumulator in shared memory (over the Q, dO and
  // dSᵀ tiles) and write it row by row, lanes along dh.
  __syncthreads();
  float* stage = reinterpret_cast<float*>(smem + L::q) + warp * 16 * L::kLde;
  const int rows = clampi(S - (k0 + warp * 16), 0, 16);
  const auto stage_acc = [&](const float (&acc)[DHP / 8][4], float scale) {
    WIOLA_UNROLL
    for (int n = 0; n < DHP / 8; ++n)
      for (int e = 0; e < 4; ++e)
        stage[(g4 + 8 * (e / 2)) * L::kLde + 8 * n + 2 * t4 + e % 2] = scale * acc[n][e];
    __syncwarp();
  };
  stage_acc(dv[0], 1.0f - beta);
  for (int e = lane; e < rows * dh; e += 32) {
    const int rr = e / dh, d = e % dh;
    const std::int64_t j = row0 + k0 + warp * 16 + rr;
    w.dv[j * w.lddv + g * dh + d] = from_float<T>(stage[rr * L::kLde + d]);
  }
  __syncwarp();
  stage_acc(dk[0], a.scale);
  const std::int64_t j0 = row0 + k0 + warp * 16;
  write_rotated_back(stage, L::kLde, rows, dh, w.dk + j0 * w.lddk + g * dh, w.lddk, w.rot,
                     w.rot.kv, j0);
}

// ---- dQ and the context coefficients -----------------------------------------------

template <class T, int DHP>
struct DqSmem {
  static constexpr int kLde = DHP + 4;  // dQ rows (fp32)
  static constexpr std::size_t stage = 0;
  static constexpr std::size_t pre = align128(stage + sizeof(float) * kWarps * 16 * kLde);
  static constexpr std::size_t ext = pre + sizeof(int) * kBQ;
  static constexpr std::size_t stat = ext + sizeof(int) * kBQ;
  static constexpr std::size_t bytes = align128(stat + sizeof(int) * 4);
};

// dQ from the key tiles' sum (dq_acc), with the context term; the context
// coefficients. No products: those ran in attention_bwd_dkdv.
template <class T, int DHP>
__global__ void __launch_bounds__(kTileThreads) attention_bwd_dq(Args<T> a, Bwd<T> w) {
  using L = DqSmem<T, DHP>;
  WIOLA_DYNAMIC_SHARED(unsigned char, smem);
  int* pre = reinterpret_cast<int*>(smem + L::pre);
  int* ext = reinterpret_cast<int*>(smem + L::ext);
  int* stat = reinterpret_cast<int*>(smem + L::stat);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n_qtiles = (a.seq + kBQ - 1) / kBQ;
  if (int(blockIdx.x) >= n_qtiles) {  // the buckets' ranks (block-uniform)
    bucket_rank(w.bk, extra_block(n_qtiles));
    return;
  }
  const int qt = n_qtiles - 1 - int(blockIdx.x), h = blockIdx.y, b = blockIdx.z;
  const int g = h % a.kv_heads, dh = a.head_dim, S = a.seq;
  const int q0 = qt * kBQ;
  const int nq = valid_queries(a, b);
  const std::int64_t row0 = std::int64_t(b) * S;
  const float beta = attention_beta(a);

  load_query_index(a, b, q0, pre, ext, stat);
  // The warp's rows of Σ dS K (none when no key tile saw the query tile).
  float* stage = reinterpret_cast<float*>(smem + L::stage) + warp * 16 * L::kLde;
  const bool seen = key_tiles(stat).n > 0;
  for (int e = lane; e < 16 * dh; e += 32) {
    const int rr = e / dh, d = e % dh, t = q0 + warp * 16 + rr;
    stage[rr * L::kLde + d] =
        seen && t < S ? w.dq_acc[(row0 + t) * w.ldacc + h * dh + d] : 0.0f;
  }
  __syncthreads();

  // Lane pair (2r, 2r + 1) adds row r's context term and writes the row and
  // its coefficients.
  const int r = lane / 2, half = lane % 2;
  const int qrow = warp * 16 + r;
  const int t = q0 + qrow;
  const bool in_seq = t < S, valid = t < nq;
  const std::int64_t i = row0 + t;
  const int crow = valid ? context_row(a, i) : 0;
  const T* qr = a.q + i * a.ldq + h * dh;  // read only for valid rows, with context
  const T* gr = w.d_o + i * w.lddo + h * dh;

  float d_ctx = 0.0f;  // dO · O_ctx (no context: O_ctx is not given)
  const bool ctx = valid && a.n_ctx > 0;
  if (ctx) {
    const T* oc = w.o_ctx + i * w.ldoc + h * dh;
    for (int d = half; d < dh; d += 2) d_ctx += to_float(gr[d]) * to_float(oc[d]);
  }
  d_ctx = pair_sum(d_ctx);
  const float lse_c = ctx ? w.lse_ctx[i * w.ldlc + h] : 0.0f;
  float ck[kMaxCtx] = {}, cv[kMaxCtx] = {};
  for (int c = 0; c < kMaxCtx; ++c) {
    if (c >= a.n_ctx) break;
    float score = 0.0f, dw = 0.0f;
    if (valid) {
      const T* kc = a.ctx_k[c] + std::int64_t(crow) * a.ld_ctx_k[c] + g * dh;
      const T* vc = a.ctx_v[c] + std::int64_t(crow) * a.ld_ctx_v[c] + g * dh;
      for (int d = half; d < dh; d += 2) {
        score += to_float(qr[d]) * to_float(kc[d]);
        dw += to_float(gr[d]) * to_float(vc[d]);
      }
    }
    score = pair_sum(score);
    dw = pair_sum(dw);
    const float wc = valid ? expf(score * a.scale - lse_c) : 0.0f;
    ck[c] = a.scale * beta * wc * (dw - d_ctx);
    cv[c] = beta * wc;
  }
  if (in_seq) {
    // dQ of the row into its staging row (this lane's columns), written below.
    for (int d = half; d < dh; d += 2) {
      float val = 0.0f;
      if (valid) {
        val = a.scale * stage[r * L::kLde + d];
        for (int c = 0; c < kMaxCtx; ++c) {
          if (c >= a.n_ctx) break;
          val += ck[c] * to_float(a.ctx_k[c][std::int64_t(crow) * a.ld_ctx_k[c] + g * dh + d]);
        }
      }
      stage[r * L::kLde + d] = val;
    }
    if (half == 0) {
      const std::int64_t at = (i * a.heads + h) * a.n_ctx;
      for (int c = 0; c < kMaxCtx; ++c) {
        if (c >= a.n_ctx) break;
        w.coef_k[at + c] = ck[c];
        w.coef_v[at + c] = cv[c];
      }
    }
  }
  __syncwarp();  // the staged dQ rows of the warp's lanes
  const std::int64_t i0 = row0 + q0 + warp * 16;
  write_rotated_back(stage, L::kLde, clampi(S - (q0 + warp * 16), 0, 16), dh,
                     w.dq + i0 * w.lddq + h * dh, w.lddq, w.rot, w.rot.q, i0);
}

template <class T, int DHP>
void launch_tiles(const Args<T>& a, const Bwd<T>& w, Stream s) {
  const auto stream = static_cast<cudaStream_t>(s);
  const unsigned kt = unsigned((a.seq + kBK - 1) / kBK), qt = unsigned((a.seq + kBQ - 1) / kBQ);
  const AttentionBytes b = attention_bytes(a);
  const std::int64_t n = std::int64_t(a.batch) * a.seq;
  // With SRPE, the position arrays (dK/dV: the keys'; dQ: both) and the
  // table rows they select.
  const std::int64_t tables =
      w.rot.on ? std::min<std::int64_t>(n, w.rot.q.npos) * 2 * (a.head_dim / 2) * 4 : 0;
  const std::int64_t rot_dkdv = w.rot.on ? n * 4 + tables : 0,
                     rot_dq = w.rot.on ? n * 8 + tables : 0;
  // The buckets' fill (each reader's key, start and cursor, read and
  // written, and its slot written) and rank (its bucket scanned, from the L2
  // cache when rows share one, and its reader slot written).
  const std::int64_t buckets = w.bk.rows > 0 ? n * 20 : 0;
  {
    using L = DkdvSmem<T, DHP>;
    auto* kernel = attention_bwd_dkdv<T, DHP>;
    allow_shared(kernel, L::bytes, "attention_bwd_dkdv");
    // With buckets, extra columns whose blocks fill them.
    const unsigned fill = w.bk.rows > 0 ? extra_columns(n, std::int64_t(a.kv_heads) * a.batch) : 0;
    WIOLA_LAUNCH(kernel, dim3(kt + fill, unsigned(a.kv_heads), unsigned(a.batch)),
                 dim3(kTileThreads), L::bytes, stream)(a, w);
    // K, V, Q, dO, lse and D read (a query tile once per key tile that it
    // sees, from the L2 cache: once); dK and dV written; Σ dS K written
    // (and read back by the later key tiles, from the L2 cache), the turns
    // read and written.
    const std::int64_t turns = std::int64_t(a.batch) * a.heads * qt * 8;
    WIOLA_CHECK_LAUNCH("attention_bwd_dkdv",
                       2 * b.kv + 2 * b.q + 2 * b.stats + n * 12 + 2 * b.kv + rot_dkdv +
                           buckets + b.q / std::int64_t(sizeof(T)) * 4 + turns);
    // Qᵀ·K and dOᵀ·V, Pᵀ·dO, dSᵀ·Q and dS·K, for every query head of the group.
    count_tile_products<DHP>(a.batch, a.heads, a.seq, 5);
  }
  {
    using L = DqSmem<T, DHP>;
    auto* kernel = attention_bwd_dq<T, DHP>;
    allow_shared(kernel, L::bytes, "attention_bwd_dq");
    // With buckets, extra columns whose blocks rank them.
    const unsigned rank = w.bk.rows > 0 ? extra_columns(n, std::int64_t(a.heads) * a.batch) : 0;
    WIOLA_LAUNCH(kernel, dim3(qt + rank, unsigned(a.heads), unsigned(a.batch)),
                 dim3(kTileThreads), L::bytes, stream)(a, w);
    // Σ dS K and the index read, and with context Q, dO, the context rows,
    // O_ctx and lse_ctx; dQ and the context coefficients written.
    const std::int64_t ctx =
        a.n_ctx > 0 ? 2 * b.q + b.ctx + b.q + b.stats + 2 * b.stats * a.n_ctx : 0;
    WIOLA_CHECK_LAUNCH("attention_bwd_dq",
                       b.q / std::int64_t(sizeof(T)) * 4 + n * 12 + ctx + b.q + rot_dq + buckets);
  }
}

}  // namespace

void attention_bwd(const AttentionDims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
                   std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v,
                   const Tensor& phi, const AttentionIndex& index, const Tensor& o_self,
                   const Tensor& o_ctx, const Tensor& lse_self, const Tensor& lse_ctx,
                   const Tensor& d_o, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                   std::span<const Tensor> dctx_k, std::span<const Tensor> dctx_v,
                   const Tensor& dphi, const AttentionGateGrad& gate,
                   const AttentionRotary& rotary, const Allocate& alloc, Stream s) {
  const std::int64_t n = std::int64_t(dims.batch) * dims.seq;
  if (n == 0) {  // no query: the context gradients are zero, dphi gets nothing
    for (std::size_t c = 0; c < dctx_k.size(); ++c) {
      kernels::fill(dctx_k[c], 0.0, s);
      kernels::fill(dctx_v[c], 0.0, s);
    }
    return;
  }
  const int n_ctx = static_cast<int>(ctx_k.size());
  const int n_qtiles = (dims.seq + kBQ - 1) / kBQ;
  const bool gated = gate.dy.defined();
  const Tensor dself = alloc(DType::F32, n, dims.heads);
  const Tensor dbeta_row = alloc(DType::F32, n, 1);
  // Without context there are no coefficients (and nothing to gather below).
  const Tensor coef_k = n_ctx > 0 ? alloc(DType::F32, n * dims.heads, n_ctx) : Tensor{};
  const Tensor coef_v = n_ctx > 0 ? alloc(DType::F32, n * dims.heads, n_ctx) : Tensor{};
  const Tensor qstats = alloc(DType::I32, std::int64_t(dims.batch) * n_qtiles, 3);
  const Tensor dq_acc = alloc(DType::F32, n, std::int64_t(dims.heads) * dims.head_dim);
  const Tensor dq_turn = alloc(DType::I32, std::int64_t(dims.batch) * dims.heads, n_qtiles);
  const auto stream = static_cast<cudaStream_t>(s);
  std::vector<Tensor> bucket_memory;  // kept until the gather is queued
  const Buckets bk = n_ctx > 0 ? make_buckets(dims, ctx_k, index, alloc, bucket_memory, s)
                               : Buckets{};

  auto run = [&](auto zero) {
    using T = decltype(zero);
    Args<T> a = make_args<T>(dims, q, k, v, ctx_k, ctx_v, phi, index);
    a.vec = a.vec && rows_aligned16(d_o, dims.head_dim);
    const Bwd<T> w{static_cast<const T*>(d_o.data()),       d_o.ld(),
                   static_cast<const T*>(o_self.data()),    o_self.ld(),
                   static_cast<const T*>(o_ctx.data()),     o_ctx.ld(),
                   static_cast<const float*>(lse_self.data()), lse_self.ld(),
                   static_cast<const float*>(lse_ctx.data()),  lse_ctx.ld(),
                   static_cast<T*>(dq.data()),              dq.ld(),
                   static_cast<T*>(dk.data()),              dk.ld(),
                   static_cast<T*>(dv.data()),              dv.ld(),
                   static_cast<float*>(dself.data()),
                   static_cast<float*>(dbeta_row.data()),
                   static_cast<float*>(coef_k.data()),
                   static_cast<float*>(coef_v.data()),
                   static_cast<int*>(qstats.data()),
                   static_cast<float*>(dq_acc.data()),
                   dq_acc.ld(),
                   static_cast<int*>(dq_turn.data()),
                   static_cast<const T*>(gate.glog.data()),
                   gated ? gate.glog.ld() : 0,
                   static_cast<const T*>(gate.o.data()),
                   gated ? gate.o.ld() : 0,
                   static_cast<const T*>(gate.dy.data()),
                   gated ? gate.dy.ld() : 0,
                   static_cast<T*>(gate.dglog.data()),
                   gated ? gate.dglog.ld() : 0,
                   gated ? static_cast<T*>(d_o.data()) : nullptr,
                   make_rotary(rotary),
                   bk};
    const auto row_blocks = static_cast<unsigned>((n + kWarps - 1) / kWarps);
    const auto tiles = static_cast<unsigned>(std::int64_t(dims.batch) * n_qtiles);
    const auto counts = n_ctx > 0 ? static_cast<unsigned>(bucket_blocks(n)) : 0u;
    WIOLA_LAUNCH(attention_bwd_prep<T>, dim3(row_blocks + tiles + counts), dim3(kTileThreads), 0,
                 stream)(a, w, row_blocks, n_qtiles);
    // dO, O_self and O_ctx of every row; D of every row and head, dβ of every
    // row. With the gate: G, O and dY read, dG and dO written (dO read back
    // by the lane that wrote it). The tiles: the index of every query row
    // read, three statistics per query tile written.
    const std::int64_t outs = (n_ctx > 0 ? 2 : 1) * bytes_of(d_o) +
                              (gated ? 5 : 1) * bytes_of(d_o);
    const std::int64_t stats = n * 8 + std::int64_t(tiles) * 12;
    // The buckets' counts: the index of every row read, its key written and
    // counted (read and written); the scan: counts read, two offsets written.
    const std::int64_t counted =
        n_ctx > 0 ? n * 16 + std::int64_t(dims.batch) * 4 + (std::int64_t(bk.rows) + 1) * 12 : 0;
    WIOLA_CHECK_LAUNCH("attention_bwd_prep",
                       outs + n * (dims.heads + 1) * 4 + n * 4 + stats + counted);
    with_padded_head_dim(dims.head_dim,
                         [&](auto dhp) { launch_tiles<T, decltype(dhp)::value>(a, w, s); });
  };
  with_compute_type(q.dtype(), run);

  if (n_ctx == 0) return;  // no context gradients, no dphi
  attention_context_grads(dims, q, d_o, ctx_k, phi, bk, static_cast<const float*>(coef_k.data()),
                          static_cast<const float*>(coef_v.data()),
                          static_cast<const float*>(dbeta_row.data()), dctx_k, dctx_v, dphi,
                          alloc, s);
}

}  // namespace wiola::cuda::kernels
