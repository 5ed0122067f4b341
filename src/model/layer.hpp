#pragma once
// One Wiola decoder layer, forward and backward, composed from backend ops:
//   X̃ = WRMSNorm(X); A = GCLA(X̃, C) (ATM wraps it in training);
//   X½ = X + A; X' = X½ + DSFF(WRMSNorm(X½)).
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "core/model_config.hpp"
#include "model/param_store.hpp"
#include "model/weight_grad_queue.hpp"
#include "ops/token_plan.hpp"

namespace wiola {

// Views of one layer's parameters (or of their gradients) in a ParamStore.
// Neighbours in the canonical order are also seen as one matrix, so that the
// products sharing an input run as one GEMM: wkv = [wk; wv], wckv = [wck;
// wcv], a_gate_up = [a_gate; a_up] (rows stacked, [out, in]), and wqg =
// [wq; wgate], one GEMM for the weight gradient everywhere and for the
// forward and data gradient on a device (linear_fwd_stacked; layer.cpp says
// why not on the CPU). wqgkv = [wq; wgate; wk; wv] where the four follow
// one another with no padding between them (else undefined): a plain
// layer's one product for all four on a device (Backend::joins_products).
struct LayerWeights {
  Tensor attn_gamma, attn_delta, wq, wk, wv, wck, wcv, wgate, wo, phi;
  Tensor ffn_gamma, ffn_delta, a_gate, a_up, a_down, b_up, b_down, fuse;
  Tensor wqg, wkv, wckv, a_gate_up, wqgkv;
  static LayerWeights params(const ParamStore& store, int layer);
  static LayerWeights grads(const ParamStore& store, int layer);
};

// A token plan in backend tensors: uploaded from a host TokenPlan (plain and
// decoding plans, made once per shape), or built by the backend's atm_plan.
struct DevicePlan : TokenPlanTensors {
  PlanKind kind = PlanKind::Plain;
  // Σ T' over the batch: B·T for a plain plan; an ATM plan's reads its
  // `groups` from the backend (a host synchronisation: statistics only).
  std::int64_t merged_tokens(Backend& be, int batch, int seq) const;
};
DevicePlan upload_plan(Backend& be, const TokenPlan& plan);

// What every layer shares: the backend, the model, the compute dtype and the
// SRPE coefficient tables.
struct LayerShared {
  Backend* backend = nullptr;
  const ModelConfig* config = nullptr;
  DType dtype = DType::F32;
  Tensor srpe_cos, srpe_sin;  // [T, dh/2]
};

// Activations one layer keeps between its forward and backward.
struct LayerSaved {
  std::shared_ptr<const DevicePlan> plan;
  int batch = 0, seq = 0;
  Tensor x, xn, rstd1;         // input, normalised input
  Tensor xm;                   // merged rows (paper: GCLA input; causal: key/value source,
                               // unless K and V are merged after their product)
  Tensor qg, kv;               // [Q | gate logits] (two products), [K | V] (one)
  Tensor q, k, v, glog;        // views of qg and kv (q, k after SRPE)
  std::vector<Tensor> ckv;     // [Kc | Vc] of every context summary
  std::vector<Tensor> ctx_k, ctx_v;
  Tensor o, o_self, o_ctx, lse_self, lse_ctx, y;
  Tensor a_merged;             // paper: attention output in merged rows
  Tensor xh, xn2, rstd2;       // X½ and its normalisation
  Tensor gu;                   // [G_A x | U_A x] of one product
  Tensor ga, ua, ha, ub, hb, ab, fl;
};

// Cached decoding (model/cached_decoder.hpp): the keys and values of the
// positions seen so far, row p holding position p (keys after SRPE).
struct LayerKvCache {
  Tensor k, v;  // [capacity, Hkv*dh]
};
// Rows one cached attention call writes: query and output rows of its block
// (the new positions first, then padding); shared by all layers.
struct DecodeScratch {
  Tensor q, o, o_self, o_ctx;  // [capacity, H*dh]
  Tensor lse_self, lse_ctx;    // [capacity, H], wide dtype
};

class DecoderLayer {
 public:
  // Gradients are looked up in `grads` at every backward (the buffer may be
  // released and re-allocated between steps).
  DecoderLayer(const LayerShared& shared, int index, LayerWeights w, const ParamStore& grads);
  int index() const { return index_; }

  // x [B*T, d]; ctx: this layer's context summaries, oldest first. `plan` is
  // the plain plan, or null in an ATM layer during training: the layer then
  // builds its merge plan from the normalised input. Returns the layer output.
  Tensor forward(const Tensor& x, std::span<const Tensor> ctx,
                 std::shared_ptr<const DevicePlan> plan, int batch, int seq, LayerSaved& s);
  // dy: gradient of the output. Returns dx; adds the gradient of each context
  // summary into dctx[c] and parameter gradients into the grad store.
  // With `defer`, the weight-gradient products are queued there instead
  // (a split backward's B; the queue's run() is its W).
  Tensor backward(const Tensor& dy, std::span<const Tensor> ctx, std::span<const Tensor> dctx,
                  LayerSaved& s, WeightGradQueue* defer = nullptr);

  // Inference with a key/value cache (no ATM, nothing kept for a backward):
  // x [n, d] holds positions past..past+n-1 of one sequence, ctx this layer's
  // context summaries of those rows (oldest first), plan = decode_plan(past,
  // n). Writes the new keys and values into rows past..past+n-1 of `kv`, then
  // lets the new rows attend over rows 0..past+n-1. Returns the output [n, d].
  Tensor forward_cached(const Tensor& x, std::span<const Tensor> ctx, const DevicePlan& plan,
                        int past, const LayerKvCache& kv, const DecodeScratch& scratch) const;

  // ATM: the merge plan for this micro-batch from cosine similarities of the
  // normalised input (no gradient flows through the decision).
  std::shared_ptr<const DevicePlan> atm_plan(const Tensor& xn, int batch, int seq) const;

 private:
  Tensor alloc(std::int64_t rows, std::int64_t cols) const;        // zero-filled
  Tensor alloc_stats(std::int64_t rows, std::int64_t cols) const;  // fp32 with bf16 compute
  // Not zero-filled: for a tensor the next op writes whole (Backend::alloc_uninit).
  Tensor output(std::int64_t rows, std::int64_t cols) const;
  Tensor output_stats(std::int64_t rows, std::int64_t cols) const;
  // Whether Q, gate, K and V are one product over w_.wqgkv of the token rows:
  // a plain or causal plan (not the paper's, whose queries are merged rows)
  // on a backend that joins products.
  bool joins_qkv(const DevicePlan& plan) const;
  Tensor attention_forward(const Tensor& xq, const Tensor& xkv, std::span<const Tensor> ctx,
                           const DevicePlan& plan, int batch, int seq, LayerSaved& s);
  Tensor attention_backward(const Tensor& da, std::span<const Tensor> ctx,
                            std::span<const Tensor> dctx, LayerSaved& s, Tensor& dxkv);
  // Kc = C·Wckᵀ, Vc = C·Wcvᵀ of every context summary as one product C·[Wck; Wcv]ᵀ
  // into s.ckv, with s.ctx_k, s.ctx_v its column views.
  void context_kv(std::span<const Tensor> ctx, LayerSaved& s) const;
  // A = (σ(G) ⊙ O)·Woᵀ for gate logits G and attention output O (s.y keeps
  // σ(G) ⊙ O). Training passes the gate to the attention op instead.
  Tensor gated_output(const Tensor& glog, const Tensor& o, LayerSaved& s) const;
  // A = Y·Woᵀ
  Tensor output_projection(const Tensor& y) const;
  // SRPE at the plan's positions, as the attention op takes it.
  AttentionRotary srpe(const DevicePlan& plan) const;
  // X' = X½ + DSFF(WRMSNorm(X½)) with X½ = x + a: the sum made with the norm,
  // and added back in the fusion's pass (add_wrmsnorm_fwd, fusion_add_fwd).
  Tensor ffn_residual(const Tensor& x, const Tensor& a, LayerSaved& s) const;
  // s.xh + DSFF(xn2)
  Tensor dsff_forward(const Tensor& xn2, LayerSaved& s) const;
  Tensor dsff_backward(const Tensor& dout, LayerSaved& s);

  LayerShared sh_;
  Backend& be_;
  const ModelConfig& c_;
  int index_;
  LayerWeights w_, g_;
  const ParamStore* store_;
  WeightGradQueue* defer_ = nullptr;  // during a split backward
};

}  // namespace wiola
