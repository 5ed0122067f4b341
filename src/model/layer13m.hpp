#pragma once
// One Wiola 13M decoder layer (../shared/SPEC.md "The Wiola 13M variant"),
// forward and backward, composed from backend ops:
//   h'  = h  + GSA(RMSNorm(h; attn_norm))
//   h'' = h' + FFN(RMSNorm(h'; ffn_norm))
// Gated spiral attention (GSA): Q, K, V projections; spiral RoPE on
// interleaved pairs of Q and K; m_s = mean over heads of q_s (before RoPE
// with gate = pre, after with post); c_t = prefix mean of m;
// g_t = σ(W2·SiLU(W1·c_t) + b2) ∈ (0,1)^H multiplies head h's scaled scores,
// which is the same as scaling the rotated query of head h by g_t^(h) before
// a plain causal attention. Butterfly FFN: [a ‖ b] = x·W_upᵀ,
// r = SiLU(a) ⊙ b + x·W_bpᵀ, out = r·W_downᵀ.
#include <memory>

#include "backend/backend.hpp"
#include "core/model_config.hpp"
#include "model/layer.hpp"
#include "model/param_store.hpp"
#include "model/weight_grad_queue.hpp"

namespace wiola {

// Views of one Wiola 13M layer's parameters (or of their gradients).
struct Layer13mWeights {
  Tensor attn_gamma, wq, wk, wv, wo, gate_w1, gate_w2, gate_b2;
  Tensor ffn_gamma, up, bypass, down;
  static Layer13mWeights params(const ParamStore& store, int layer);
  static Layer13mWeights grads(const ParamStore& store, int layer);
};

// Activations one layer keeps between its forward and backward.
struct Layer13mSaved {
  std::shared_ptr<const DevicePlan> plan;
  int batch = 0, seq = 0;
  Tensor x, xn, rstd1;     // input, normalised input
  Tensor q_pre, q, k, v;   // projections; q, k after spiral RoPE
  Tensor m, c, u, su, glog, g;  // gate: head mean, prefix mean, W1 out, SiLU, logits, σ
  Tensor qs, o, lse;       // gated queries, attention output and its log-sum-exp
  Tensor xh, xn2, rstd2;   // h' and its normalisation
  Tensor ab, r;            // up projection [a ‖ b], butterfly output r
};

class Wiola13mLayer {
 public:
  // Gradients are looked up in `grads` at every backward.
  Wiola13mLayer(const LayerShared& shared, int index, Layer13mWeights w, const ParamStore& grads);
  int index() const { return index_; }

  // x [B*T, d]; `plan` is the plain causal plan (positions 0..T-1 per
  // sequence). Returns the layer output.
  Tensor forward(const Tensor& x, std::shared_ptr<const DevicePlan> plan, int batch, int seq,
                 Layer13mSaved& s);
  // dy: gradient of the output. Returns dx; adds parameter gradients into the
  // grad store. Releases `s`.
  // With `defer`, the weight-gradient products are queued there (as
  // DecoderLayer::backward).
  Tensor backward(const Tensor& dy, Layer13mSaved& s, WeightGradQueue* defer = nullptr);

 private:
  Tensor alloc(std::int64_t rows, std::int64_t cols) const;
  Tensor alloc_stats(std::int64_t rows, std::int64_t cols) const;
  Tensor ones(std::int64_t rows, std::int64_t cols) const;
  Tensor zero_rows(std::int64_t rows) const;  // I32 [rows, 1] of 0 (broadcasts the gate bias)

  LayerShared sh_;
  Backend& be_;
  const ModelConfig& c_;
  int index_;
  Layer13mWeights w_, g_;
  WeightGradQueue* defer_ = nullptr;  // during a split backward
  const ParamStore* store_;
};

}  // namespace wiola
