#pragma once
// GCLA attention core: causal (or index-mapped) softmax attention over the
// sequence, a second softmax over the n_ctx context summaries, and the β-blend
// O = (1 − β) O_self + β O_ctx. Query head h reads key/value group h % kv_heads.
// With n_ctx = 0 (plain attention) O = O_self, and β, O_ctx and lse_ctx are
// neither read nor written (their pointers may be null).
//
// Forward runs over (batch, head) pairs. Backward runs over (batch, kv_group)
// pairs and loops over the heads of the group inside, so the dK/dV rows of a
// group are only ever written by one thread; the context gradients, whose rows
// can be shared by many queries (and sequences), are scattered afterwards by
// destination row. Every sum has a fixed order: results do not depend on the
// thread count.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/activations.hpp"
#include "ops/buckets.hpp"

namespace wiola::ops {

// Raw views of the inputs shared by forward and backward. Index arrays are
// I32 columns with a row stride; key rows are 0-based inside a sequence block.
template <class T>
struct AttentionArgs {
  std::int64_t batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
  const T* q = nullptr;
  std::int64_t ldq = 0;
  const T* k = nullptr;
  std::int64_t ldk = 0;
  const T* v = nullptr;
  std::int64_t ldv = 0;
  std::vector<const T*> ctx_k, ctx_v;  // one per summary, oldest first
  std::vector<std::int64_t> ld_ctx_k, ld_ctx_v;
  T beta = 0;  // σ(φ)
  const std::int32_t* n_queries = nullptr;
  std::int64_t ld_nq = 1;
  const std::int32_t* key_prefix = nullptr;
  std::int64_t ld_kp = 1;
  const std::int32_t* key_extra = nullptr;
  std::int64_t ld_ke = 1;
  const std::int32_t* ctx_row = nullptr;
  std::int64_t ld_cr = 1;
};

template <class T>
struct AttentionOutputs {
  T* o = nullptr;
  std::int64_t ldo = 0;
  T* o_self = nullptr;
  std::int64_t ldos = 0;
  T* o_ctx = nullptr;
  std::int64_t ldoc = 0;
  T* lse_self = nullptr;
  std::int64_t ldls = 0;
  T* lse_ctx = nullptr;
  std::int64_t ldlc = 0;
};

// What backward reads besides the inputs (saved by forward, and dO).
template <class T>
struct AttentionSaved {
  const T* o_self = nullptr;
  std::int64_t ldos = 0;
  const T* o_ctx = nullptr;
  std::int64_t ldoc = 0;
  const T* lse_self = nullptr;
  std::int64_t ldls = 0;
  const T* lse_ctx = nullptr;
  std::int64_t ldlc = 0;
  const T* d_o = nullptr;
  std::int64_t lddo = 0;
};

template <class T>
struct AttentionGrads {
  T* dq = nullptr;
  std::int64_t lddq = 0;
  T* dk = nullptr;
  std::int64_t lddk = 0;
  T* dv = nullptr;
  std::int64_t lddv = 0;
  std::vector<T*> dctx_k, dctx_v;
  std::vector<std::int64_t> ld_dctx_k, ld_dctx_v;
  std::vector<std::int64_t> ctx_rows;  // rows of every context tensor
};

namespace attention_detail {

// Dot product with eight running sums combined in a fixed order: vectorises
// without -ffast-math and rounds the same way on every run.
template <class T>
inline T dot(const T* a, const T* b, std::int64_t n) {
  T acc[8] = {};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  T tail = T(0);
  for (; i < n; ++i) tail += a[i] * b[i];
  return (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) +
         tail;
}

// y += alpha · x
template <class T>
inline void axpy(T alpha, const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// The keys query i sees: rows [0, prefix) and row `extra` (−1: none). An extra
// row that already lies inside the prefix is seen once, like any other.
struct Visible {
  std::int64_t prefix = 0, extra = -1;
  std::int64_t count() const { return prefix + (extra >= 0 ? 1 : 0); }
  std::int64_t row(std::int64_t s) const { return s < prefix ? s : extra; }
};

template <class T>
Visible visible_keys(const AttentionArgs<T>& a, std::int64_t i) {
  Visible v;
  v.prefix = a.key_prefix[i * a.ld_kp];
  const std::int64_t e = a.key_extra[i * a.ld_ke];
  v.extra = e >= v.prefix ? e : -1;
  return v;
}

// score[s] = scale · q·K_row(s) over the visible keys of block b, group g.
// Returns the largest score.
template <class T>
T self_scores(const AttentionArgs<T>& a, std::int64_t b, std::int64_t g, const T* q,
              const Visible& vis, T scale, T* score) {
  T m = -std::numeric_limits<T>::infinity();
  for (std::int64_t s = 0; s < vis.count(); ++s) {
    const T* kr = a.k + (b * a.seq + vis.row(s)) * a.ldk + g * a.head_dim;
    score[s] = scale * dot(q, kr, a.head_dim);
    m = score[s] > m ? score[s] : m;
  }
  return m;
}

template <class T>
const T* ctx_key(const AttentionArgs<T>& a, std::size_t c, std::int64_t row, std::int64_t g) {
  return a.ctx_k[c] + row * a.ld_ctx_k[c] + g * a.head_dim;
}
template <class T>
const T* ctx_value(const AttentionArgs<T>& a, std::size_t c, std::int64_t row, std::int64_t g) {
  return a.ctx_v[c] + row * a.ld_ctx_v[c] + g * a.head_dim;
}

template <class T>
void zero(T* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = T(0);
}

}  // namespace attention_detail

template <class T>
void attention_fwd(const AttentionArgs<T>& a, const AttentionOutputs<T>& out) {
  using namespace attention_detail;
  const std::int64_t S = a.seq, H = a.heads, G = a.kv_heads, dh = a.head_dim;
  const std::size_t nctx = a.ctx_k.size();
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (std::int64_t b = 0; b < a.batch; ++b) {
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t g = h % G;
      const std::int64_t nq = a.n_queries[b * a.ld_nq];
      std::vector<T> score(static_cast<std::size_t>(S + 1)), acc(static_cast<std::size_t>(dh));
      std::vector<T> cscore(nctx);
      for (std::int64_t t = 0; t < S; ++t) {
        const std::int64_t i = b * S + t;
        T* o = out.o + i * out.ldo + h * dh;
        T* os = out.o_self + i * out.ldos + h * dh;
        T* oc = nctx > 0 ? out.o_ctx + i * out.ldoc + h * dh : nullptr;
        T& lse_s = out.lse_self[i * out.ldls + h];
        T* lse_c = nctx > 0 ? out.lse_ctx + i * out.ldlc + h : nullptr;
        if (t >= nq) {  // padding row
          zero(os, dh);
          zero(o, dh);
          lse_s = T(0);
          if (nctx > 0) {
            zero(oc, dh);
            *lse_c = T(0);
          }
          continue;
        }
        const T* q = a.q + i * a.ldq + h * dh;

        // Self attention over the visible keys.
        const Visible vis = visible_keys(a, i);
        const T m = self_scores(a, b, g, q, vis, scale, score.data());
        double l = 0.0;
        zero(acc.data(), dh);
        for (std::int64_t s = 0; s < vis.count(); ++s) {
          const T p = std::exp(score[static_cast<std::size_t>(s)] - m);
          l += static_cast<double>(p);
          axpy(p, a.v + (b * S + vis.row(s)) * a.ldv + g * dh, acc.data(), dh);
        }
        T inv = static_cast<T>(1.0 / l);
        for (std::int64_t d = 0; d < dh; ++d) os[d] = acc[static_cast<std::size_t>(d)] * inv;
        lse_s = static_cast<T>(static_cast<double>(m) + std::log(l));
        if (nctx == 0) {  // no context: O = O_self (o may be o_self)
          for (std::int64_t d = 0; d < dh; ++d) o[d] = os[d];
          continue;
        }

        // Context attention over the summaries.
        const std::int64_t crow = a.ctx_row[i * a.ld_cr];
        T mc = -std::numeric_limits<T>::infinity();
        for (std::size_t c = 0; c < nctx; ++c) {
          cscore[c] = scale * dot(q, ctx_key(a, c, crow, g), dh);
          mc = cscore[c] > mc ? cscore[c] : mc;
        }
        double lc = 0.0;
        zero(acc.data(), dh);
        for (std::size_t c = 0; c < nctx; ++c) {
          const T p = std::exp(cscore[c] - mc);
          lc += static_cast<double>(p);
          axpy(p, ctx_value(a, c, crow, g), acc.data(), dh);
        }
        inv = static_cast<T>(1.0 / lc);
        for (std::int64_t d = 0; d < dh; ++d) oc[d] = acc[static_cast<std::size_t>(d)] * inv;
        *lse_c = static_cast<T>(static_cast<double>(mc) + std::log(lc));

        for (std::int64_t d = 0; d < dh; ++d) o[d] = (T(1) - a.beta) * os[d] + a.beta * oc[d];
      }
    }
  }
}

// Writes dq, dk, dv and the context gradients; returns dL/dφ for the caller to
// add into dphi. Standard softmax backward: dS = P ⊙ (dP − D), D = dO·O.
template <class T>
double attention_bwd(const AttentionArgs<T>& a, const AttentionSaved<T>& sv,
                     const AttentionGrads<T>& gr) {
  using namespace attention_detail;
  const std::int64_t B = a.batch, S = a.seq, H = a.heads, G = a.kv_heads, dh = a.head_dim;
  const std::size_t nctx = a.ctx_k.size();
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(dh)));
  const T beta = a.beta;
  // Per (query row, head, summary): the factors of the context scatter.
  std::vector<T> coef_k(static_cast<std::size_t>(B * S * H) * nctx, T(0));
  std::vector<T> coef_v(coef_k.size(), T(0));
  std::vector<double> dbeta_part(static_cast<std::size_t>(B * G), 0.0);

#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t g = 0; g < G; ++g) {
      const std::int64_t nq = a.n_queries[b * a.ld_nq];
      for (std::int64_t t = 0; t < S; ++t) {
        zero(gr.dk + (b * S + t) * gr.lddk + g * dh, dh);
        zero(gr.dv + (b * S + t) * gr.lddv + g * dh, dh);
      }
      std::vector<T> score(static_cast<std::size_t>(S + 1));
      std::vector<T> dos(static_cast<std::size_t>(dh)), doc(static_cast<std::size_t>(dh)),
          dq_acc(static_cast<std::size_t>(dh));
      double dbeta = 0.0;
      for (std::int64_t h = g; h < H; h += G) {
        for (std::int64_t t = 0; t < S; ++t) {
          const std::int64_t i = b * S + t;
          T* dq = gr.dq + i * gr.lddq + h * dh;
          if (t >= nq) {  // padding row: no gradient in or out
            zero(dq, dh);
            continue;
          }
          const T* q = a.q + i * a.ldq + h * dh;
          const T* d_o = sv.d_o + i * sv.lddo + h * dh;
          const T* os = sv.o_self + i * sv.ldos + h * dh;
          const T* oc = nctx > 0 ? sv.o_ctx + i * sv.ldoc + h * dh : nullptr;
          for (std::int64_t d = 0; d < dh; ++d) {
            if (nctx > 0)
              dbeta += static_cast<double>(d_o[d]) *
                       (static_cast<double>(oc[d]) - static_cast<double>(os[d]));
            dos[static_cast<std::size_t>(d)] = (T(1) - beta) * d_o[d];
            doc[static_cast<std::size_t>(d)] = beta * d_o[d];
          }
          zero(dq_acc.data(), dh);

          // Self attention.
          const Visible vis = visible_keys(a, i);
          self_scores(a, b, g, q, vis, scale, score.data());
          const T lse_s = sv.lse_self[i * sv.ldls + h];
          const T d_self = dot(dos.data(), os, dh);
          for (std::int64_t s = 0; s < vis.count(); ++s) {
            const std::int64_t row = b * S + vis.row(s);
            const T* kr = a.k + row * a.ldk + g * dh;
            const T* vr = a.v + row * a.ldv + g * dh;
            const T p = std::exp(score[static_cast<std::size_t>(s)] - lse_s);
            const T ds = p * (dot(dos.data(), vr, dh) - d_self);
            axpy(ds, kr, dq_acc.data(), dh);
            axpy(scale * ds, q, gr.dk + row * gr.lddk + g * dh, dh);
            axpy(p, dos.data(), gr.dv + row * gr.lddv + g * dh, dh);
          }

          // Context attention: dq here, the context rows in the scatter below.
          const std::int64_t crow = a.ctx_row[i * a.ld_cr];
          const T lse_c = nctx > 0 ? sv.lse_ctx[i * sv.ldlc + h] : T(0);
          const T d_ctx = nctx > 0 ? dot(doc.data(), oc, dh) : T(0);
          for (std::size_t c = 0; c < nctx; ++c) {
            const T* kc = ctx_key(a, c, crow, g);
            const T w = std::exp(scale * dot(q, kc, dh) - lse_c);
            const T ds = w * (dot(doc.data(), ctx_value(a, c, crow, g), dh) - d_ctx);
            axpy(ds, kc, dq_acc.data(), dh);
            const std::size_t at = static_cast<std::size_t>(i * H + h) * nctx + c;
            coef_k[at] = scale * ds;
            coef_v[at] = beta * w;
          }
          for (std::int64_t d = 0; d < dh; ++d) dq[d] = scale * dq_acc[static_cast<std::size_t>(d)];
        }
      }
      dbeta_part[static_cast<std::size_t>(b * G + g)] = dbeta;
    }
  }

  if (nctx == 0) return 0.0;  // no context: no context gradients, no dφ

  // Context gradients: written, so zero them first, then add every valid
  // query's contribution grouped by the context row it read.
  std::int64_t max_rows = 0;
  for (std::size_t c = 0; c < nctx; ++c)
    max_rows = gr.ctx_rows[c] > max_rows ? gr.ctx_rows[c] : max_rows;
  const Buckets readers = bucket_by_key(max_rows, B * S, [&](std::int64_t i) -> std::int64_t {
    return i % S < a.n_queries[(i / S) * a.ld_nq] ? a.ctx_row[i * a.ld_cr] : -1;
  });
#pragma omp parallel for schedule(dynamic, 4)
  for (std::int64_t r = 0; r < max_rows; ++r) {
    for (std::size_t c = 0; c < nctx; ++c) {
      if (r >= gr.ctx_rows[c]) continue;
      zero(gr.dctx_k[c] + r * gr.ld_dctx_k[c], G * dh);
      zero(gr.dctx_v[c] + r * gr.ld_dctx_v[c], G * dh);
    }
    for (std::int64_t k = readers.start[static_cast<std::size_t>(r)];
         k < readers.start[static_cast<std::size_t>(r + 1)]; ++k) {
      const std::int64_t i = readers.items[static_cast<std::size_t>(k)];
      for (std::int64_t h = 0; h < H; ++h) {
        const std::int64_t g = h % G;
        const T* q = a.q + i * a.ldq + h * dh;
        const T* d_o = sv.d_o + i * sv.lddo + h * dh;
        for (std::size_t c = 0; c < nctx; ++c) {
          if (r >= gr.ctx_rows[c]) continue;
          const std::size_t at = static_cast<std::size_t>(i * H + h) * nctx + c;
          axpy(coef_k[at], q, gr.dctx_k[c] + r * gr.ld_dctx_k[c] + g * dh, dh);
          axpy(coef_v[at], d_o, gr.dctx_v[c] + r * gr.ld_dctx_v[c] + g * dh, dh);
        }
      }
    }
  }

  double dbeta = 0.0;
  for (double p : dbeta_part) dbeta += p;
  const double bd = static_cast<double>(beta);
  return dbeta * bd * (1.0 - bd);
}

}  // namespace wiola::ops
