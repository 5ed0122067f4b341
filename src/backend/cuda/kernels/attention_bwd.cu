// GCLA attention backward, FlashAttention-2 style: the self-attention
// probabilities are recomputed from the saved lse_self, never stored.
//
// With dO_self = (1 − β) dO and dO_ctx = β dO:
//   D_i     = dO_self,i · O_self,i                      (prep kernel)
//   P_ij    = exp(q_i·k_j / √dh − lse_i)  over visible (i, j)
//   dS_ij   = P_ij ((1 − β) dO_i·v_j − D_i)
//   dq_i    = Σ_j dS_ij k_j / √dh  +  Σ_c coef_k[i,c] ctx_k[c]      (dQ kernel)
//   dk_j    = Σ_i dS_ij q_i / √dh,   dv_j = (1 − β) Σ_i P_ij dO_i    (dK/dV kernel)
//   context: w_c = exp(q·ctx_k[c] / √dh − lse_ctx), ds_c = β w_c (dO·ctx_v[c] − dO·O_ctx),
//            coef_k = ds_c / √dh, coef_v = β w_c (dQ kernel's epilogue; the context
//            rows' gradients are gathered from them in attention_ctx.cu)
//   dβ      = Σ dO · (O_ctx − O_self), dφ = dβ β (1 − β)  (per-row partials in prep)
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
//       knows which query tiles can see its keys;
//     - with context, last, the context rows' bucket counts and their scan
//       (attention_buckets.cuh: the dK/dV and dQ kernels' extra columns of
//       blocks fill and rank them, for the gather in attention_ctx.cu).
//   attention_bwd_dkdv  grid (key tiles, Hkv, B), 128 threads. The block keeps
//     its 64 x DHP K and V tiles in shared memory and loops over the query
//     heads of its group and the query tiles that can see it, staging Q, dO,
//     lse and D of each. Warp w owns key rows [16w, 16w + 16):
//       Sᵀ = K_w Qᵀ, P -> shared (fp32, and the compute dtype for the product),
//       dPᵀ = V_w dOᵀ, dSᵀ -> shared (over the fp32 P), dV_w += Pᵀ dO, dK_w += dSᵀ Q
//     (tensor cores in bf16, fp32 fragments). Each dK/dV row is written by one
//     block, so no atomics: deterministic. 112 KiB of shared memory per block
//     at dh = 128 in bf16 (two blocks per H100 SM; 189 KiB in fp32, more than
//     an A100 block may have: fp32 at dh > 96 needs sm_90).
//   attention_bwd_dq  grid (query tiles, H, B), 128 threads, the forward's
//     tiling: Q and dO tiles stay, K and V tiles stream over the visible key
//     tiles; warp w owns query rows [16w, 16w + 16): S = Q_w Kᵀ, P (fp32) -> shared,
//     dP = dO_w Vᵀ, dS -> shared, dQ_w += dS K. Its epilogue (lane pair per row) adds the
//     context term and writes the context coefficients.
//   With SRPE (AttentionRotary), Q is the rotated one, K is rotated as it is
//   staged (as in the forward), and the dQ and dK epilogues round each row
//   to the compute type, then rotate it back (write_rotated_back): srpe_bwd's
//   bits without its two passes.
#include <vector>

#include "backend/cuda/kernels/attention.hpp"
#include "backend/cuda/kernels/attention_buckets.cuh"
#include "backend/cuda/kernels/attention_common.cuh"
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

// ---- dK, dV ----------------------------------------------------------------------

template <class T, int DHP>
struct DkdvSmem {
  static constexpr int kLdt = DHP + 8;  // K, V, Q, dO tiles (T)
  static constexpr int kLds = kBK + 4;  // per-warp fp32 scores
  static constexpr int kLdp = kBQ + 8;  // per-warp P (T)
  // dS (T) is written over the warp's fp32 P once that is read: a row stride
  // that fits there and suits wmma (a multiple of 8 for bf16).
  static constexpr int kLdd = sizeof(T) == 2 ? kBQ + 8 : kLds;
  static_assert(sizeof(T) * 16 * kLdd <= sizeof(float) * 16 * kLds);
  static constexpr int kLde = DHP + 4;  // epilogue staging (fp32), over the Q and dO tiles
  static constexpr std::size_t k = 0;
  static constexpr std::size_t v = align128(k + sizeof(T) * kBK * kLdt);
  static constexpr std::size_t q = align128(v + sizeof(T) * kBK * kLdt);
  static constexpr std::size_t d_o = align128(q + sizeof(T) * kBQ * kLdt);
  static constexpr std::size_t tiles_end = align128(d_o + sizeof(T) * kBQ * kLdt);
  static constexpr std::size_t stage_end = align128(q + sizeof(float) * kWarps * 16 * kLde);
  static constexpr std::size_t s = tiles_end > stage_end ? tiles_end : stage_end;
  static constexpr std::size_t pf = align128(s + sizeof(float) * kWarps * 16 * kLds);
  static constexpr std::size_t p = align128(pf + sizeof(float) * kWarps * 16 * kLds);
  static constexpr std::size_t lse = align128(p + sizeof(T) * kWarps * 16 * kLdp);
  static constexpr std::size_t dd = lse + sizeof(float) * kBQ;
  static constexpr std::size_t pre = dd + sizeof(float) * kBQ;
  static constexpr std::size_t ext = pre + sizeof(int) * kBQ;
  static constexpr std::size_t stat = ext + sizeof(int) * kBQ;
  static constexpr std::size_t bytes = align128(stat + sizeof(int) * 4);
};

template <class T, int DHP>
__global__ void __launch_bounds__(kTileThreads) attention_bwd_dkdv(Args<T> a, Bwd<T> w) {
  using L = DkdvSmem<T, DHP>;
  WIOLA_DYNAMIC_SHARED(unsigned char, smem);
  T* ks = reinterpret_cast<T*>(smem + L::k);
  T* vs = reinterpret_cast<T*>(smem + L::v);
  T* qs = reinterpret_cast<T*>(smem + L::q);
  T* dos = reinterpret_cast<T*>(smem + L::d_o);
  float* lse = reinterpret_cast<float*>(smem + L::lse);
  float* dd = reinterpret_cast<float*>(smem + L::dd);
  int* pre = reinterpret_cast<int*>(smem + L::pre);
  int* ext = reinterpret_cast<int*>(smem + L::ext);
  int* stat = reinterpret_cast<int*>(smem + L::stat);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* sw = reinterpret_cast<float*>(smem + L::s) + warp * 16 * L::kLds;
  float* pf = reinterpret_cast<float*>(smem + L::pf) + warp * 16 * L::kLds;
  T* pw = reinterpret_cast<T*>(smem + L::p) + warp * 16 * L::kLdp;
  T* dsw = reinterpret_cast<T*>(pf);  // over P (fp32) once it is read

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
  load_tile<T, DHP, kBK>(ks, a.k + (row0 + k0) * a.ldk + g * dh, a.ldk, krows, dh, a.vec, nullptr);
  load_tile<T, DHP, kBK>(vs, a.v + (row0 + k0) * a.ldv + g * dh, a.ldv, krows, dh, a.vec, nullptr);
  if (w.rot.on) {  // K taken before SRPE: srpe_fwd's bits, in shared memory
    __syncthreads();
    rotate_tile<T, DHP>(ks, krows, dh, w.rot.kv, row0 + k0, nullptr);
  }  // the loop's first barrier comes before K is read

  // Lanes 2r and 2r + 1 own key row r of the warp's 16 (Sᵀ row r).
  const int r = lane / 2, half = lane % 2;
  const int key = k0 + warp * 16 + r;
  WarpAcc<T, DHP> dk, dv;
  dk.zero();
  dv.zero();

  for (int qt = 0; qt < n_qtiles; ++qt) {
    const int* st = w.qstats + (std::int64_t(b) * n_qtiles + qt) * 3;
    if (!visits(st, kt)) continue;
    const int q0 = qt * kBQ, qrows = clampi(nq - q0, 0, kBQ);
    __syncthreads();  // the previous tile's index is no longer read
    load_query_index(a, b, q0, pre, ext, stat);
    for (int h = g; h < a.heads; h += a.kv_heads) {
      __syncthreads();  // the previous head's Q, dO, lse, D are consumed
      load_tile<T, DHP, kBQ>(qs, a.q + (row0 + q0) * a.ldq + h * dh, a.ldq, qrows, dh, a.vec,
                             nullptr);
      load_tile<T, DHP, kBQ>(dos, w.d_o + (row0 + q0) * w.lddo + h * dh, w.lddo, qrows, dh,
                             a.vec, nullptr);
      for (int c = threadIdx.x; c < kBQ; c += blockDim.x) {
        const std::int64_t i = row0 + q0 + c;
        lse[c] = c < qrows ? w.lse_self[i * w.ldls + h] : 0.0f;
        dd[c] = c < qrows ? w.dself[i * a.heads + h] : 0.0f;
      }
      __syncthreads();

      warp_nt<T, DHP>(sw, L::kLds, ks + warp * 16 * L::kLdt, qs);  // Sᵀ
      __syncwarp();
      // P in fp32 stays in shared memory (pf) for dS, not in registers, which
      // hold the dK and dV accumulators.
      unsigned vis = 0;
      for (int k = 0; k < 32; ++k) {
        const int c = 2 * k + half;
        const bool v = key < pre[c] || key == ext[c];
        const float p = v ? expf(sw[r * L::kLds + c] * a.scale - lse[c]) : 0.0f;
        vis |= (v ? 1u : 0u) << k;
        pf[r * L::kLds + c] = p;
        pw[r * L::kLdp + c] = from_float<T>(p);
      }
      __syncwarp();
      warp_nt<T, DHP>(sw, L::kLds, vs + warp * 16 * L::kLdt, dos);  // dPᵀ / (1 − β)
      __syncwarp();
      float ds[32];
      for (int k = 0; k < 32; ++k) {
        const int c = 2 * k + half;
        ds[k] = (vis >> k) & 1u
                    ? pf[r * L::kLds + c] * ((1.0f - beta) * sw[r * L::kLds + c] - dd[c])
                    : 0.0f;
      }
      __syncwarp();  // every lane has read P before dS overwrites it
      for (int k = 0; k < 32; ++k) dsw[r * L::kLdd + 2 * k + half] = from_float<T>(ds[k]);
      __syncwarp();
      dv.mma(pw, L::kLdp, dos);
      dk.mma(dsw, L::kLdd, qs);
    }
  }

  // Epilogue: stage each accumulator in shared memory (over the Q and dO
  // tiles) and write it row by row, lanes along dh.
  __syncthreads();
  float* stage = reinterpret_cast<float*>(smem + L::q) + warp * 16 * L::kLde;
  const int rows = clampi(S - (k0 + warp * 16), 0, 16);
  dv.store(stage, L::kLde);
  __syncwarp();
  for (int e = lane; e < rows * dh; e += 32) {
    const int rr = e / dh, d = e % dh;
    const std::int64_t j = row0 + k0 + warp * 16 + rr;
    w.dv[j * w.lddv + g * dh + d] = from_float<T>((1.0f - beta) * stage[rr * L::kLde + d]);
  }
  __syncwarp();
  dk.store(stage, L::kLde);
  __syncwarp();
  for (int e = lane; e < rows * dh; e += 32) stage[(e / dh) * L::kLde + e % dh] *= a.scale;
  __syncwarp();
  const std::int64_t j0 = row0 + k0 + warp * 16;
  write_rotated_back(stage, L::kLde, rows, dh, w.dk + j0 * w.lddk + g * dh, w.lddk, w.rot,
                     w.rot.kv, j0);
}

// ---- dQ and the context coefficients -----------------------------------------------

template <class T, int DHP>
struct DqSmem {
  static constexpr int kLdt = DHP + 8;
  static constexpr int kLds = kBK + 4;
  static constexpr int kLdp = kBK + 8;
  static constexpr int kLde = DHP + 4;  // epilogue staging (fp32), over the K and V tiles
  static constexpr std::size_t q = 0;
  static constexpr std::size_t d_o = align128(q + sizeof(T) * kBQ * kLdt);
  static constexpr std::size_t k = align128(d_o + sizeof(T) * kBQ * kLdt);
  static constexpr std::size_t v = align128(k + sizeof(T) * kBK * kLdt);
  static constexpr std::size_t tiles_end = align128(v + sizeof(T) * kBK * kLdt);
  static constexpr std::size_t stage_end = align128(k + sizeof(float) * kWarps * 16 * kLde);
  static constexpr std::size_t s = tiles_end > stage_end ? tiles_end : stage_end;
  static constexpr std::size_t pf = align128(s + sizeof(float) * kWarps * 16 * kLds);
  static constexpr std::size_t p = align128(pf + sizeof(float) * kWarps * 16 * kLds);
  static constexpr std::size_t lse = align128(p + sizeof(T) * kWarps * 16 * kLdp);
  static constexpr std::size_t dd = lse + sizeof(float) * kBQ;
  static constexpr std::size_t pre = dd + sizeof(float) * kBQ;
  static constexpr std::size_t ext = pre + sizeof(int) * kBQ;
  static constexpr std::size_t stat = ext + sizeof(int) * kBQ;
  static constexpr std::size_t used = stat + sizeof(int) * 4;
  static constexpr std::size_t bytes = align128(used + kBK);
};

template <class T, int DHP>
__global__ void __launch_bounds__(kTileThreads) attention_bwd_dq(Args<T> a, Bwd<T> w) {
  using L = DqSmem<T, DHP>;
  WIOLA_DYNAMIC_SHARED(unsigned char, smem);
  T* qs = reinterpret_cast<T*>(smem + L::q);
  T* dos = reinterpret_cast<T*>(smem + L::d_o);
  T* ks = reinterpret_cast<T*>(smem + L::k);
  T* vs = reinterpret_cast<T*>(smem + L::v);
  float* lse = reinterpret_cast<float*>(smem + L::lse);
  float* dd = reinterpret_cast<float*>(smem + L::dd);
  int* pre = reinterpret_cast<int*>(smem + L::pre);
  int* ext = reinterpret_cast<int*>(smem + L::ext);
  int* stat = reinterpret_cast<int*>(smem + L::stat);
  unsigned char* used = smem + L::used;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* sw = reinterpret_cast<float*>(smem + L::s) + warp * 16 * L::kLds;
  float* pf = reinterpret_cast<float*>(smem + L::pf) + warp * 16 * L::kLds;
  T* pw = reinterpret_cast<T*>(smem + L::p) + warp * 16 * L::kLdp;

  const int n_qtiles = (a.seq + kBQ - 1) / kBQ;
  if (int(blockIdx.x) >= n_qtiles) {  // the buckets' ranks (block-uniform)
    bucket_rank(w.bk, extra_block(n_qtiles));
    return;
  }
  const int qt = n_qtiles - 1 - int(blockIdx.x), h = blockIdx.y, b = blockIdx.z;
  const int g = h % a.kv_heads, dh = a.head_dim, S = a.seq;
  const int q0 = qt * kBQ;
  const int nq = valid_queries(a, b), qrows = clampi(nq - q0, 0, kBQ);
  const std::int64_t row0 = std::int64_t(b) * S;
  const float beta = attention_beta(a);

  load_query_index(a, b, q0, pre, ext, stat);
  load_tile<T, DHP, kBQ>(qs, a.q + (row0 + q0) * a.ldq + h * dh, a.ldq, qrows, dh, a.vec, nullptr);
  load_tile<T, DHP, kBQ>(dos, w.d_o + (row0 + q0) * w.lddo + h * dh, w.lddo, qrows, dh, a.vec,
                         nullptr);
  for (int c = threadIdx.x; c < kBQ; c += blockDim.x) {
    const std::int64_t i = row0 + q0 + c;
    lse[c] = c < qrows ? w.lse_self[i * w.ldls + h] : 0.0f;
    dd[c] = c < qrows ? w.dself[i * a.heads + h] : 0.0f;
  }
  __syncthreads();
  const KeyTiles tiles = key_tiles(stat);

  // Lanes 2r and 2r + 1 own query row r of the warp's 16.
  const int r = lane / 2, half = lane % 2;
  const int qrow = warp * 16 + r;
  const int my_pre = pre[qrow], my_ext = ext[qrow];
  const float my_lse = lse[qrow], my_d = dd[qrow];
  WarpAcc<T, DHP> acc;
  acc.zero();

  for (int it = 0; it < tiles.n; ++it) {
    const int k0 = tiles.tile(it) * kBK;
    __syncthreads();  // every warp is done with the previous K, V and flags
    mark_used_keys(k0, stat, ext, used);
    const int krows = clampi(S - k0, 0, kBK);
    load_tile<T, DHP, kBK>(ks, a.k + (row0 + k0) * a.ldk + g * dh, a.ldk, krows, dh, a.vec, used);
    load_tile<T, DHP, kBK>(vs, a.v + (row0 + k0) * a.ldv + g * dh, a.ldv, krows, dh, a.vec,
                           nullptr);
    __syncthreads();
    if (w.rot.on) {  // K taken before SRPE, its unseen rows left zero
      rotate_tile<T, DHP>(ks, krows, dh, w.rot.kv, row0 + k0, used);
      __syncthreads();
    }

    warp_nt<T, DHP>(sw, L::kLds, qs + warp * 16 * L::kLdt, ks);  // S
    __syncwarp();
    unsigned vis = 0;  // P (fp32) waits in shared memory, not in registers
    for (int k = 0; k < 32; ++k) {
      const int c = 2 * k + half, kk = k0 + c;
      const bool v = kk < my_pre || kk == my_ext;
      pf[r * L::kLds + c] = v ? expf(sw[r * L::kLds + c] * a.scale - my_lse) : 0.0f;
      vis |= (v ? 1u : 0u) << k;
    }
    __syncwarp();
    warp_nt<T, DHP>(sw, L::kLds, dos + warp * 16 * L::kLdt, vs);  // dP / (1 − β)
    __syncwarp();
    for (int k = 0; k < 32; ++k) {
      const int c = 2 * k + half;
      const float ds = (vis >> k) & 1u
                           ? pf[r * L::kLds + c] * ((1.0f - beta) * sw[r * L::kLds + c] - my_d)
                           : 0.0f;
      pw[r * L::kLdp + c] = from_float<T>(ds);
    }
    __syncwarp();
    acc.mma(pw, L::kLdp, ks);
  }

  // Epilogue: dQ_w -> shared (over the K and V tiles); lane pair (2r, 2r + 1)
  // adds row r's context term and writes the row and its coefficients.
  __syncthreads();
  float* stage = reinterpret_cast<float*>(smem + L::k) + warp * 16 * L::kLde;
  acc.store(stage, L::kLde);
  __syncwarp();
  const int t = q0 + qrow;
  const bool in_seq = t < S, valid = t < nq;
  const std::int64_t i = row0 + t;
  const int crow = valid ? context_row(a, i) : 0;
  const T* qr = qs + qrow * L::kLdt;
  const T* gr = dos + qrow * L::kLdt;

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
    // sees, from the L2 cache: once); dK and dV written.
    WIOLA_CHECK_LAUNCH("attention_bwd_dkdv",
                       2 * b.kv + 2 * b.q + 2 * b.stats + n * 12 + 2 * b.kv + rot_dkdv +
                           buckets);
    // Q·Kᵀ and dO·Vᵀ again, Pᵀ·dO and dSᵀ·Q, for every query head of the group.
    count_tile_products<DHP>(a.batch, a.heads, a.seq, 4);
  }
  {
    using L = DqSmem<T, DHP>;
    auto* kernel = attention_bwd_dq<T, DHP>;
    allow_shared(kernel, L::bytes, "attention_bwd_dq");
    // With buckets, extra columns whose blocks rank them.
    const unsigned rank = w.bk.rows > 0 ? extra_columns(n, std::int64_t(a.heads) * a.batch) : 0;
    WIOLA_LAUNCH(kernel, dim3(qt + rank, unsigned(a.heads), unsigned(a.batch)),
                 dim3(kTileThreads), L::bytes, stream)(a, w);
    // Q, dO, lse, D, K, V and the index read, and with context the context
    // rows, O_ctx and lse_ctx; dQ and the context coefficients written.
    const std::int64_t ctx = a.n_ctx > 0 ? b.ctx + b.q + b.stats + 2 * b.stats * a.n_ctx : 0;
    WIOLA_CHECK_LAUNCH("attention_bwd_dq",
                       2 * b.q + 2 * b.stats + 2 * b.kv + n * 12 + ctx + b.q + rot_dq +
                           buckets);
    count_tile_products<DHP>(a.batch, a.heads, a.seq, 3);  // Q·Kᵀ and dO·Vᵀ again, dS·K
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
