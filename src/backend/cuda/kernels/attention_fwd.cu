// GCLA attention forward: one fused flash-style kernel.
//
// Algorithm (per query row i of head h, group g = h % Hkv):
//   self:    online softmax over the visible keys, one key tile at a time:
//            m = running max of the scaled scores, l = Σ exp(s − m),
//            O = Σ exp(s − m) V, so O_self = O / l and lse_self = m + log l,
//            never forming the T x T score matrix.
//   context: scores q·ctx_k[c][ctx_row[i]] / √dh over the n_ctx <= 8 summaries,
//            their softmax weights the ctx_v rows: O_ctx and lse_ctx.
//   blend:   O = (1 − β) O_self + β O_ctx, β = σ(φ); O = O_self without
//            context (n_ctx = 0: O_ctx and lse_ctx not written).
//   Padding rows (t >= n_queries) get zeros everywhere.
//   SRPE (when given): Q and K are taken before it. Each block rotates its
//   own Q rows in place before staging them; every staged K tile is rotated
//   in shared memory. The arithmetic is the SRPE kernel's
//   (kernels/common.cuh), so the scores see srpe_fwd's bits.
//
// Tiling: grid (ceil(T / 128) query tiles, H, B), 128 threads. The block
// stages its 128 x DHP tile of Q in shared memory, then visits the 64-key
// tiles its queries can see (attention_common.cuh). K and V tiles are double
// buffered: the next tile's cp.async copies are in flight while the warps
// work on this one. Warp w owns query rows [32w, 32w + 32) of the tile, two
// blocks of 16, in registers (attention_registers.cuh: mma.sync m16n8k16 in
// bf16, each K and V fragment read once for both blocks):
//   S = Q_w Kᵀ (32 x 64) in registers, the quad of lanes holding a row
//   masks it, takes the row max, and forms P = exp(s − m) and the row sum l
//   of the fp32 P (so lse_self is exact, and the backward's recomputed P
//   sums to 1);
//   O_w = O_w · α + P V, with P rounded to the compute dtype on its way from
//   the score registers into the product's operands.
// V rows that no query of the tile sees are loaded as zero (0 · NaN would
// poison P V); masked scores are selected away, never multiplied. The
// epilogue stages O_w in shared memory (over the K and V buffers), and each
// lane pair finishes its two rows: O_self, the context softmax, the blend,
// lse_self and lse_ctx. Query tiles run from the last (most keys) to the
// first, so long blocks start early. Shared memory: 104 KiB per block at
// dh = 128 in bf16 (two blocks per H100 SM); 223 KiB in fp32, which at
// dh > 64 is more than an A100 block may have (fp32 is for checking).
#include "backend/cuda/kernels/attention.hpp"
#include "backend/cuda/kernels/attention_common.cuh"
#include "backend/cuda/kernels/attention_registers.cuh"

namespace wiola::cuda::kernels {

namespace {

using namespace attn;

template <class T>
struct FwdOut {
  T* o;
  std::int64_t ldo;
  T* o_self;
  std::int64_t ldos;
  T* o_ctx;
  std::int64_t ldoc;
  float* lse_self;
  std::int64_t ldls;
  float* lse_ctx;
  std::int64_t ldlc;
  const T* glog;  // the output gate (null: none): y = σ(glog) ⊙ O
  std::int64_t ldg;
  T* y;
  std::int64_t ldy;
  // SRPE (rot.on): Q rotated in place (q_rot is Q, writable); K is rotated
  // as it is staged.
  AttnRotary rot;
  T* q_rot;
  std::int64_t ldqr;
};

// A warp's query rows: kRowBlocks blocks of 16; the block's query tile.
constexpr int kRowBlocks = 2;
constexpr int kWarpRows = 16 * kRowBlocks;
constexpr int kFwdRows = kWarps * kWarpRows;  // 128

// Shared memory of the forward kernel, in bytes from the start.
template <class T, int DHP>
struct FwdSmem {
  static constexpr int kLdt = DHP + 8;                      // Q, K, V tiles (T)
  static constexpr int kLds = (DHP > kBK ? DHP : kBK) + 4;  // epilogue rows (fp32)
  static constexpr int kLdp = kBK + 4;                      // fp32 products' P scratch
  static constexpr std::size_t tile = sizeof(T) * kBK * kLdt;
  static constexpr std::size_t q = 0;
  static constexpr std::size_t kv = align128(q + sizeof(T) * kFwdRows * kLdt);  // K0 V0 K1 V1
  static constexpr std::size_t kv_end = kv + 4 * tile;
  // Per warp, fp32 [kWarpRows][kLds]: every warp's O in the epilogue, over
  // the K and V buffers (free by then) as far as they reach.
  static constexpr std::size_t s = kv;
  static constexpr std::size_t s_end = s + sizeof(float) * kWarps * kWarpRows * kLds;
  // Per warp, fp32 [16][kLdp]: P of the fp32 products (none in bf16, where P
  // stays in registers).
  static constexpr std::size_t p = align128(kv_end > s_end ? kv_end : s_end);
  static constexpr std::size_t p_end =
      p + (kTensorCores<T> ? 0 : sizeof(float) * kWarps * 16 * kLdp);
  static constexpr std::size_t ml = align128(p_end);  // m, l per row
  static constexpr std::size_t pre = ml + sizeof(float) * 2 * kFwdRows;
  static constexpr std::size_t ext = pre + sizeof(int) * kFwdRows;
  static constexpr std::size_t stat = ext + sizeof(int) * kFwdRows;
  static constexpr std::size_t used = stat + sizeof(int) * 4;
  static constexpr std::size_t bytes = align128(used + 2 * kBK);
};

template <class T, int DHP>
__global__ void __launch_bounds__(kTileThreads)
    attention_fwd_kernel(Args<T> a, FwdOut<T> out) {
  using L = FwdSmem<T, DHP>;
  using RT = RegisterTiles<T, DHP>;
  WIOLA_DYNAMIC_SHARED(unsigned char, smem);
  T* qs = reinterpret_cast<T*>(smem + L::q);
  const auto k_buf = [&](int i) { return reinterpret_cast<T*>(smem + L::kv + 2 * i * L::tile); };
  const auto v_buf = [&](int i) { return k_buf(i) + L::tile / sizeof(T); };
  float* m_row = reinterpret_cast<float*>(smem + L::ml);
  float* l_row = m_row + kFwdRows;
  int* pre = reinterpret_cast<int*>(smem + L::pre);
  int* ext = reinterpret_cast<int*>(smem + L::ext);
  int* stat = reinterpret_cast<int*>(smem + L::stat);
  unsigned char* used2 = smem + L::used;  // two sets of flags

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* sw = reinterpret_cast<float*>(smem + L::s) + warp * kWarpRows * L::kLds;
  float* pw = reinterpret_cast<float*>(smem + L::p) + warp * 16 * L::kLdp;

  const int qt = int(gridDim.x) - 1 - int(blockIdx.x), h = blockIdx.y, b = blockIdx.z;
  const int g = h % a.kv_heads, dh = a.head_dim, S = a.seq;
  const int q0 = qt * kFwdRows;
  const int nq = valid_queries(a, b);
  const std::int64_t row0 = std::int64_t(b) * S;  // first row of the sequence
  const float beta = attention_beta(a);

  load_query_index<kFwdRows>(a, b, q0, pre, ext, stat);
  if (out.rot.on) {
    // The block's Q rows, every one in the sequence as srpe_fwd does, rotated
    // in place before they are staged (no other block reads them).
    rotate_rows(a.q + (row0 + q0) * a.ldq + h * dh, a.ldq,
                out.q_rot + (row0 + q0) * out.ldqr + h * dh, out.ldqr,
                clampi(S - q0, 0, kFwdRows), dh, out.rot.q, row0 + q0, nullptr);
    __syncthreads();  // the rotated rows are what the block stages next
  }
  const KeyTiles tiles = key_tiles(stat);
  // Issues the loads of the it-th key tile's K and V into buffer it % 2.
  // mark_used_keys' barriers also mean every warp is done with that buffer,
  // and its flags take turns too: threads may still be issuing the previous
  // tile's V from the other set.
  const auto fetch = [&](int it) {
    const int k0 = tiles.tile(it) * kBK, krows = clampi(S - k0, 0, kBK);
    unsigned char* used = used2 + (it % 2) * kBK;
    mark_used_keys<kFwdRows>(k0, stat, ext, used);
    load_tile_async<T, DHP, kBK>(k_buf(it % 2), a.k + (row0 + k0) * a.ldk + g * dh, a.ldk, krows,
                                 dh, a.vec, nullptr);
    load_tile_async<T, DHP, kBK>(v_buf(it % 2), a.v + (row0 + k0) * a.ldv + g * dh, a.ldv, krows,
                                 dh, a.vec, used);
  };
  // Q lands with the first key tile.
  load_tile_async<T, DHP, kFwdRows>(qs, a.q + (row0 + q0) * a.ldq + h * dh, a.ldq,
                                    clampi(nq - q0, 0, kFwdRows), dh, a.vec, nullptr);
  if (tiles.n > 0) fetch(0);
  mma::cp_async_commit();

  // Lane (g4, t4) holds rows 16r + g4 + 8i (r < kRowBlocks, i < 2) of the
  // warp's kWarpRows (attention_registers.cuh).
  const int g4 = lane / 4, t4 = lane % 4;
  const T* q_warp = qs + warp * kWarpRows * L::kLdt;
  int my_pre[kRowBlocks][2], my_ext[kRowBlocks][2];
  float m_used[kRowBlocks][2], l[kRowBlocks][2];
  for (int r = 0; r < kRowBlocks; ++r)
    for (int i = 0; i < 2; ++i) {
      const int row = warp * kWarpRows + 16 * r + g4 + 8 * i;
      my_pre[r][i] = pre[row];
      my_ext[r][i] = ext[row];
      m_used[r][i] = -INFINITY;
      l[r][i] = 0.0f;
    }
  float o[kRowBlocks][DHP / 8][4];
  WIOLA_UNROLL
  for (int r = 0; r < kRowBlocks; ++r)
    for (int n = 0; n < DHP / 8; ++n)
      for (int e = 0; e < 4; ++e) o[r][n][e] = 0.0f;

  for (int it = 0; it < tiles.n; ++it) {
    const int k0 = tiles.tile(it) * kBK;
    if (it + 1 < tiles.n) {
      fetch(it + 1);
      mma::cp_async_commit();
      mma::cp_async_wait<1>();  // tile it (and Q) landed; it + 1 in flight
    } else {
      mma::cp_async_wait<0>();
    }
    __syncthreads();
    T* ks = k_buf(it % 2);
    if (out.rot.on) {  // srpe_fwd's bits, in shared memory
      rotate_tile<T, DHP>(ks, clampi(S - k0, 0, kBK), dh, out.rot.kv, row0 + k0, nullptr);
      __syncthreads();
    }

    float s[kRowBlocks][kScoreSlices][4];
    RT::nt(s, q_warp, ks);
    WIOLA_UNROLL
    for (int r = 0; r < kRowBlocks; ++r) {
      float mx[2] = {-INFINITY, -INFINITY};
      WIOLA_UNROLL
      for (int j = 0; j < kScoreSlices; ++j)
        for (int e = 0; e < 4; ++e) {
          const int i = e / 2, key = k0 + 8 * j + 2 * t4 + e % 2;
          const bool vis = key < my_pre[r][i] || key == my_ext[r][i];
          s[r][j][e] = vis ? s[r][j][e] * a.scale : -INFINITY;
          mx[i] = fmaxf(mx[i], s[r][j][e]);
        }
      float al[2], sum[2] = {0.0f, 0.0f};
      for (int i = 0; i < 2; ++i) {
        mx[i] = quad_max(mx[i]);
        // A row with no visible key in this tile keeps its max (and α = 1).
        const bool up = mx[i] > m_used[r][i];
        al[i] = up ? expf(m_used[r][i] - mx[i]) : 1.0f;  // 0 on the first visible tile
        if (up) m_used[r][i] = mx[i];
      }
      WIOLA_UNROLL
      for (int j = 0; j < kScoreSlices; ++j)
        for (int e = 0; e < 4; ++e) {
          const int i = e / 2;
          s[r][j][e] = s[r][j][e] == -INFINITY ? 0.0f : expf(s[r][j][e] - m_used[r][i]);
          sum[i] += s[r][j][e];  // of the fp32 weights: lse_self is the exact log-sum-exp
        }
      for (int i = 0; i < 2; ++i) l[r][i] = l[r][i] * al[i] + quad_sum(sum[i]);
      WIOLA_UNROLL
      for (int n = 0; n < DHP / 8; ++n)
        for (int e = 0; e < 4; ++e) o[r][n][e] *= al[e / 2];
    }
    RT::accumulate_pv(o, s, v_buf(it % 2), pw);
  }

  // Epilogue: O -> shared (over the K and V buffers, once every warp is done
  // with them; the wait covers Q when no key tile was visited), then lane
  // pair (2r, 2r + 1) finishes rows r and r + 16 of the warp's.
  mma::cp_async_wait<0>();
  __syncthreads();
  WIOLA_UNROLL
  for (int r = 0; r < kRowBlocks; ++r)
    for (int n = 0; n < DHP / 8; ++n)
      for (int e = 0; e < 4; ++e)
        sw[(16 * r + g4 + 8 * (e / 2)) * L::kLds + 8 * n + 2 * t4 + e % 2] = o[r][n][e];
  if (t4 == 0)
    for (int r = 0; r < kRowBlocks; ++r)
      for (int i = 0; i < 2; ++i) {
        const int row = warp * kWarpRows + 16 * r + g4 + 8 * i;
        m_row[row] = m_used[r][i];
        l_row[row] = l[r][i];
      }
  __syncwarp();
  const int half = lane % 2;
  for (int rb = 0; rb < kRowBlocks; ++rb) {
    const int r = 16 * rb + lane / 2;  // the row of the warp's
    const int qrow = warp * kWarpRows + r;
    const float row_l = l_row[qrow], row_m = m_row[qrow];
    const int t = q0 + qrow;
    const bool in_seq = t < S, valid = t < nq;
    const std::int64_t i = row0 + t;
    const int crow = valid ? context_row(a, i) : 0;
    const T* qr = qs + qrow * L::kLdt;

    float w[kMaxCtx];
    float mc = -INFINITY;
    for (int c = 0; c < kMaxCtx; ++c) {
      if (c >= a.n_ctx) break;
      float part = 0.0f;
      if (valid) {
        const T* kc = a.ctx_k[c] + std::int64_t(crow) * a.ld_ctx_k[c] + g * dh;
        for (int d = half; d < dh; d += 2) part += to_float(qr[d]) * to_float(kc[d]);
      }
      w[c] = pair_sum(part) * a.scale;
      mc = fmaxf(mc, w[c]);
    }
    float lc = 0.0f;
    for (int c = 0; c < kMaxCtx; ++c) {
      if (c >= a.n_ctx) break;
      w[c] = expf(w[c] - mc);
      lc += w[c];
    }
    // Without context (n_ctx = 0) lc is 0, O_ctx and lse_ctx are not written
    // and O = O_self exactly (β = 0).
    const bool ctx = a.n_ctx > 0;
    const float inv_l = row_l > 0.0f ? 1.0f / row_l : 0.0f, inv_lc = ctx ? 1.0f / lc : 0.0f;
    if (!in_seq) continue;
    T* o_out = out.o + i * out.ldo + h * dh;
    T* os = out.o_self + i * out.ldos + h * dh;
    T* oc = ctx ? out.o_ctx + i * out.ldoc + h * dh : nullptr;
    const T* gl = out.glog ? out.glog + i * out.ldg + h * dh : nullptr;
    T* gy = out.glog ? out.y + i * out.ldy + h * dh : nullptr;
    for (int d = half; d < dh; d += 2) {
      float self = 0.0f, cx = 0.0f;
      if (valid) {
        self = sw[r * L::kLds + d] * inv_l;
        for (int c = 0; c < kMaxCtx; ++c) {
          if (c >= a.n_ctx) break;
          cx += w[c] * to_float(a.ctx_v[c][std::int64_t(crow) * a.ld_ctx_v[c] + g * dh + d]);
        }
        cx *= inv_lc;
      }
      os[d] = from_float<T>(self);
      if (oc) oc[d] = from_float<T>(cx);
      const T ov = from_float<T>(oc ? (1.0f - beta) * self + beta * cx : self);
      o_out[d] = ov;
      // The gate reads O as stored, as sigmoid_mul_fwd would.
      if (gl) gy[d] = from_float<T>(gate_fwd(to_float(gl[d]), to_float(ov)));
    }
    if (half == 0) {
      out.lse_self[i * out.ldls + h] = valid && row_l > 0.0f ? row_m + logf(row_l) : 0.0f;
      if (ctx) out.lse_ctx[i * out.ldlc + h] = valid ? mc + logf(lc) : 0.0f;
    }
  }
}

template <class T, int DHP>
void launch_fwd(const Args<T>& a, const FwdOut<T>& out, Stream s) {
  using L = FwdSmem<T, DHP>;
  auto* kernel = attention_fwd_kernel<T, DHP>;
  allow_shared(kernel, L::bytes, "attention_fwd_kernel");
  const dim3 grid(unsigned((a.seq + kFwdRows - 1) / kFwdRows), unsigned(a.heads),
                  unsigned(a.batch));
  WIOLA_LAUNCH(kernel, grid, dim3(kTileThreads), L::bytes, static_cast<cudaStream_t>(s))(a, out);
  // Q, K, V, the context rows and the index read; O, O_self, O_ctx and the
  // log-sum-exps written.
  const AttentionBytes b = attention_bytes(a);
  // With the gate, its logits read and Y written.
  const std::int64_t n = std::int64_t(a.batch) * a.seq, ctx = a.n_ctx > 0 ? 1 : 0;
  const std::int64_t gate = out.glog ? 2 * b.q : 0;
  // With SRPE, Q written back, the positions and the table rows they select
  // read.
  const std::int64_t table_rows = std::min<std::int64_t>(n, out.rot.q.npos);
  const std::int64_t rot = out.rot.on ? b.q + n * 8 + table_rows * 2 * (a.head_dim / 2) * 4 : 0;
  WIOLA_CHECK_LAUNCH("attention_fwd_kernel", b.q + 2 * b.kv + b.ctx + n * 12 +
                                                 (2 + ctx) * b.q + (1 + ctx) * b.stats + gate +
                                                 rot);
  count_tile_products<DHP, kFwdRows>(a.batch, a.heads, a.seq, 2);  // Q·Kᵀ and P·V
}

}  // namespace

void attention_fwd(const AttentionDims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
                   std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v,
                   const Tensor& phi, const AttentionIndex& index, const Tensor& o,
                   const Tensor& o_self, const Tensor& o_ctx, const Tensor& lse_self,
                   const Tensor& lse_ctx, const AttentionGate& gate,
                   const AttentionRotary& rotary, Stream s) {
  if (dims.batch == 0) return;
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const Args<T> a = make_args<T>(dims, q, k, v, ctx_k, ctx_v, phi, index);
    const FwdOut<T> out{static_cast<T*>(o.data()),          o.ld(),
                        static_cast<T*>(o_self.data()),     o_self.ld(),
                        static_cast<T*>(o_ctx.data()),      o_ctx.ld(),
                        static_cast<float*>(lse_self.data()), lse_self.ld(),
                        static_cast<float*>(lse_ctx.data()),  lse_ctx.ld(),
                        static_cast<const T*>(gate.glog.data()), gate.glog.defined() ? gate.glog.ld() : 0,
                        static_cast<T*>(gate.y.data()),       gate.y.defined() ? gate.y.ld() : 0,
                        make_rotary(rotary),
                        static_cast<T*>(q.data()),            q.ld()};
    with_padded_head_dim(dims.head_dim, [&](auto dhp) { launch_fwd<T, decltype(dhp)::value>(a, out, s); });
  };
  with_compute_type(q.dtype(), run);
}

}  // namespace wiola::cuda::kernels
