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
// Tiling: grid (ceil(T / 64) query tiles, H, B), 128 threads. The block
// stages its 64 x DHP tile of Q in shared memory, then visits the 64-key
// tiles its queries can see (attention_common.cuh), staging each K and V tile
// in shared memory. Warp w owns query rows [16w, 16w + 16) of the tile:
//   S = Q_w Kᵀ (16 x 64, tensor cores in bf16) -> shared fp32;
//   lanes 2r and 2r + 1 own row r: mask, row max, P = exp(s − m) -> shared
//   (compute dtype), row sum l of the fp32 P (so lse_self is exact, and the
//   backward's recomputed P sums to 1);
//   O_w (fp32 fragments) = O_w · α + P V.
// V rows that no query of the tile sees are loaded as zero (0 · NaN would
// poison P V); masked scores are selected away, never multiplied.
// The running max only moves when a row's tile max exceeds it by more than
// kRescale (8 in bf16: P stays <= e^8, exact after the final division; 0 in
// fp32), so the accumulator round trip through shared memory that rescaling
// needs (fragment layouts are opaque) is rare. The epilogue stages O_w in
// shared memory, and each lane pair finishes its row: O_self, the context
// softmax, the blend, lse_self and lse_ctx. Query tiles run from the last
// (most keys) to the first, so long blocks start early. Shared memory: 94 KiB
// per block at dh = 128 in bf16 (two blocks per H100 SM), 154 KiB in fp32.
#include "backend/cuda/kernels/attention.hpp"
#include "backend/cuda/kernels/attention_common.cuh"

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

// Shared memory of the forward kernel, in bytes from the start.
template <class T, int DHP>
struct FwdSmem {
  static constexpr int kLdt = DHP + 8;                       // Q, K, V tiles (T)
  static constexpr int kLds = (DHP > kBK ? DHP : kBK) + 4;   // per-warp fp32 scores / scratch
  static constexpr int kLdp = kBK + 8;                       // per-warp P (T)
  static constexpr std::size_t q = 0;
  static constexpr std::size_t k = align128(q + sizeof(T) * kBQ * kLdt);
  static constexpr std::size_t v = align128(k + sizeof(T) * kBK * kLdt);
  static constexpr std::size_t s = align128(v + sizeof(T) * kBK * kLdt);
  static constexpr std::size_t p = align128(s + sizeof(float) * kWarps * 16 * kLds);
  static constexpr std::size_t alpha = align128(p + sizeof(T) * kWarps * 16 * kLdp);
  static constexpr std::size_t pre = align128(alpha + sizeof(float) * kWarps * 16);
  static constexpr std::size_t ext = pre + sizeof(int) * kBQ;
  static constexpr std::size_t stat = ext + sizeof(int) * kBQ;
  static constexpr std::size_t used = stat + sizeof(int) * 4;
  static constexpr std::size_t bytes = align128(used + kBK);
};

template <class T>
constexpr float kRescale = kTensorCores<T> ? 8.0f : 0.0f;

template <class T, int DHP>
__global__ void __launch_bounds__(kTileThreads)
    attention_fwd_kernel(Args<T> a, FwdOut<T> out) {
  using L = FwdSmem<T, DHP>;
  WIOLA_DYNAMIC_SHARED(unsigned char, smem);
  T* qs = reinterpret_cast<T*>(smem + L::q);
  T* ks = reinterpret_cast<T*>(smem + L::k);
  T* vs = reinterpret_cast<T*>(smem + L::v);
  int* pre = reinterpret_cast<int*>(smem + L::pre);
  int* ext = reinterpret_cast<int*>(smem + L::ext);
  int* stat = reinterpret_cast<int*>(smem + L::stat);
  unsigned char* used = smem + L::used;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* sw = reinterpret_cast<float*>(smem + L::s) + warp * 16 * L::kLds;
  T* pw = reinterpret_cast<T*>(smem + L::p) + warp * 16 * L::kLdp;
  float* alpha = reinterpret_cast<float*>(smem + L::alpha) + warp * 16;

  const int qt = int(gridDim.x) - 1 - int(blockIdx.x), h = blockIdx.y, b = blockIdx.z;
  const int g = h % a.kv_heads, dh = a.head_dim, S = a.seq;
  const int q0 = qt * kBQ;
  const int nq = valid_queries(a, b);
  const std::int64_t row0 = std::int64_t(b) * S;  // first row of the sequence
  const float beta = attention_beta(a);

  load_query_index(a, b, q0, pre, ext, stat);
  if (out.rot.on) {
    // The block's Q rows, every one in the sequence as srpe_fwd does, rotated
    // in place before they are staged (no other block reads them).
    rotate_rows(a.q + (row0 + q0) * a.ldq + h * dh, a.ldq, out.q_rot + (row0 + q0) * out.ldqr + h * dh,
                out.ldqr, clampi(S - q0, 0, kBQ), dh, out.rot.q, row0 + q0, nullptr);
    __syncthreads();  // the rotated rows are what the block stages next
  }
  load_tile<T, DHP, kBQ>(qs, a.q + (row0 + q0) * a.ldq + h * dh, a.ldq, clampi(nq - q0, 0, kBQ),
                         dh, a.vec, nullptr);
  const KeyTiles tiles = key_tiles(stat);

  // Lanes 2r and 2r + 1 own query row r of the warp's 16.
  const int r = lane / 2, half = lane % 2;
  const int qrow = warp * 16 + r;
  const int my_pre = pre[qrow], my_ext = ext[qrow];
  float m_used = -INFINITY, l = 0.0f;
  WarpAcc<T, DHP> acc;
  acc.zero();

  for (int it = 0; it < tiles.n; ++it) {
    const int k0 = tiles.tile(it) * kBK;
    __syncthreads();  // every warp is done with the previous K, V and flags (and Q is in)
    mark_used_keys(k0, stat, ext, used);
    const int krows = clampi(S - k0, 0, kBK);
    load_tile<T, DHP, kBK>(ks, a.k + (row0 + k0) * a.ldk + g * dh, a.ldk, krows, dh, a.vec,
                           nullptr);
    load_tile<T, DHP, kBK>(vs, a.v + (row0 + k0) * a.ldv + g * dh, a.ldv, krows, dh, a.vec, used);
    __syncthreads();
    if (out.rot.on) {  // srpe_fwd's bits, in shared memory
      rotate_tile<T, DHP>(ks, krows, dh, out.rot.kv, row0 + k0, nullptr);
      __syncthreads();
    }

    warp_nt<T, DHP>(sw, L::kLds, qs + warp * 16 * L::kLdt, ks);
    __syncwarp();
    float s[32];
    float mx = -INFINITY;
    for (int k = 0; k < 32; ++k) {
      const int c = 2 * k + half, key = k0 + c;
      const bool vis = key < my_pre || key == my_ext;
      s[k] = vis ? sw[r * L::kLds + c] * a.scale : -INFINITY;
      mx = fmaxf(mx, s[k]);
    }
    mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
    const bool need = mx > m_used + kRescale<T>;
    const float m_new = need ? mx : m_used;
    const float al = need ? expf(m_used - m_new) : 1.0f;  // 0 on the first visible tile
    float sum = 0.0f;  // of the fp32 weights: lse_self is the exact log-sum-exp
    for (int k = 0; k < 32; ++k) {
      const float p = s[k] == -INFINITY ? 0.0f : expf(s[k] - m_new);
      pw[r * L::kLdp + 2 * k + half] = from_float<T>(p);
      sum += p;
    }
    sum = pair_sum(sum);
    l = l * al + sum;
    m_used = m_new;
    if (half == 0) alpha[r] = al;
    const bool any = __any_sync(kFull, need);
    __syncwarp();
    if (any) acc.scale_rows(alpha, sw, L::kLds);
    acc.mma(pw, L::kLdp, vs);
  }

  // Epilogue: O_w -> shared, then lane pair (2r, 2r + 1) finishes row r. The
  // barrier makes the Q tile visible when no key tile was visited.
  __syncthreads();
  acc.store(sw, L::kLds);
  __syncwarp();
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
  // Without context (n_ctx = 0) lc is 0, O_ctx and lse_ctx are not written and
  // O = O_self exactly (β = 0).
  const bool ctx = a.n_ctx > 0;
  const float inv_l = l > 0.0f ? 1.0f / l : 0.0f, inv_lc = ctx ? 1.0f / lc : 0.0f;
  if (in_seq) {
    T* o = out.o + i * out.ldo + h * dh;
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
      o[d] = ov;
      // The gate reads O as stored, as sigmoid_mul_fwd would.
      if (gl) gy[d] = from_float<T>(gate_fwd(to_float(gl[d]), to_float(ov)));
    }
    if (half == 0) {
      out.lse_self[i * out.ldls + h] = valid && l > 0.0f ? m_used + logf(l) : 0.0f;
      if (ctx) out.lse_ctx[i * out.ldlc + h] = valid ? mc + logf(lc) : 0.0f;
    }
  }
}

template <class T, int DHP>
void launch_fwd(const Args<T>& a, const FwdOut<T>& out, Stream s) {
  using L = FwdSmem<T, DHP>;
  auto* kernel = attention_fwd_kernel<T, DHP>;
  allow_shared(kernel, L::bytes, "attention_fwd_kernel");
  const dim3 grid(unsigned((a.seq + kBQ - 1) / kBQ), unsigned(a.heads), unsigned(a.batch));
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
  count_tile_products<DHP>(a.batch, a.heads, a.seq, 2);  // Q·Kᵀ and P·V
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
