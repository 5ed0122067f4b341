#pragma once
// GCLA attention core: causal (or index-mapped) softmax attention over the
// sequence, a second softmax over the n_ctx context summaries, and the β-blend
// O = (1 − β) O_self + β O_ctx. Query head h reads key/value group h % kv_heads.
// With n_ctx = 0 (plain attention) O = O_self, and β, O_ctx and lse_ctx are
// neither read nor written (their pointers may be null).
//
// The kernels (kernels_impl.hpp, "attention") are blocked and fused in the
// flash style of the CUDA backend: an online softmax over key blocks, never a
// T x T matrix, the context sub-attention and the blend in the same pass.
// Forward runs over (sequence, head, query block). Backward runs over
// (sequence, kv_group) pairs and loops over the heads of the group inside, so
// the dK/dV rows of a group are only ever written by one thread; the context
// gradients, whose rows can be shared by many queries (and sequences), are
// scattered afterwards by destination row (here). Every sum has a fixed
// order: results do not depend on the thread count.
#include <cstdint>
#include <vector>

#include "ops/attention_args.hpp"
#include "ops/buckets.hpp"
#include "ops/kernels.hpp"

namespace wiola::ops {

template <class T>
void attention_fwd(const AttentionArgs<T>& a, const AttentionOutputs<T>& out) {
  kernel_set<T>().attention_fwd(a, out);
}

// Writes dq, dk, dv and the context gradients; returns dL/dφ for the caller to
// add into dphi. Standard softmax backward: dS = P ⊙ (dP − D), D = dO·O.
template <class T>
double attention_bwd(const AttentionArgs<T>& a, const AttentionSaved<T>& sv,
                     const AttentionGrads<T>& grads) {
  const std::int64_t B = a.batch, S = a.seq, H = a.heads, G = a.kv_heads, dh = a.head_dim;
  const std::size_t nctx = a.ctx_k.size();
  // Per (query row, head, summary): the factors of the context scatter.
  std::vector<T> coef_k(static_cast<std::size_t>(B * S * H) * nctx, T(0));
  std::vector<T> coef_v(coef_k.size(), T(0));
  AttentionGrads<T> gr = grads;
  gr.coef_k = coef_k.data();
  gr.coef_v = coef_v.data();
  double dbeta = 0.0;
  kernel_set<T>().attention_bwd(a, sv, gr, &dbeta);

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
      T* zk = gr.dctx_k[c] + r * gr.ld_dctx_k[c];
      T* zv = gr.dctx_v[c] + r * gr.ld_dctx_v[c];
      for (std::int64_t e = 0; e < G * dh; ++e) zk[e] = zv[e] = T(0);
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
          T* dk = gr.dctx_k[c] + r * gr.ld_dctx_k[c] + g * dh;
          T* dv = gr.dctx_v[c] + r * gr.ld_dctx_v[c] + g * dh;
          for (std::int64_t d = 0; d < dh; ++d) {
            dk[d] += coef_k[at] * q[d];
            dv[d] += coef_v[at] * d_o[d];
          }
        }
      }
    }
  }

  const double bd = static_cast<double>(a.beta);
  return dbeta * bd * (1.0 - bd);
}

}  // namespace wiola::ops
