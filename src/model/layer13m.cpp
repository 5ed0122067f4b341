#include "model/layer13m.hpp"

#include "core/error.hpp"
#include "core/param_names.hpp"

namespace wiola {

namespace {

Layer13mWeights views(const ParamStore& store, int layer, bool grads) {
  namespace role = param_names::role;
  auto get = [&](const char* r) {
    const std::string name = param_names::layer_param(layer, r);
    return grads ? store.grad(name) : store.param(name);
  };
  Layer13mWeights w;
  w.attn_gamma = get(role::kAttnNormGamma);
  w.wq = get(role::kQProj);
  w.wk = get(role::kKProj);
  w.wv = get(role::kVProj);
  w.wo = get(role::kOProj);
  w.gate_w1 = get(role::kGateW1);
  w.gate_w2 = get(role::kGateW2);
  w.gate_b2 = get(role::kGateW2Bias);
  w.ffn_gamma = get(role::kFfnNormGamma);
  w.up = get(role::kUp);
  w.bypass = get(role::kBypass);
  w.down = get(role::kDown);
  return w;
}

}  // namespace

Layer13mWeights Layer13mWeights::params(const ParamStore& store, int layer) {
  return views(store, layer, false);
}
Layer13mWeights Layer13mWeights::grads(const ParamStore& store, int layer) {
  return views(store, layer, true);
}

Wiola13mLayer::Wiola13mLayer(const LayerShared& shared, int index, Layer13mWeights w,
                             const ParamStore& grads)
    : sh_(shared), be_(*shared.backend), c_(*shared.config), index_(index), w_(std::move(w)),
      store_(&grads) {}

Tensor Wiola13mLayer::alloc(std::int64_t rows, std::int64_t cols) const {
  return be_.alloc(sh_.dtype, rows, cols);
}

Tensor Wiola13mLayer::alloc_stats(std::int64_t rows, std::int64_t cols) const {
  return be_.alloc(wide_dtype(sh_.dtype), rows, cols);
}

Tensor Wiola13mLayer::ones(std::int64_t rows, std::int64_t cols) const {
  Tensor t = alloc(rows, cols);
  be_.fill(t, 1.0);
  return t;
}

Tensor Wiola13mLayer::zero_rows(std::int64_t rows) const {
  return be_.alloc(DType::I32, rows, 1);  // zero-filled
}

Tensor Wiola13mLayer::forward(const Tensor& x, std::shared_ptr<const DevicePlan> plan, int batch,
                              int seq, Layer13mSaved& s) {
  const std::int64_t N = x.rows();
  const int d = c_.d, H = c_.H, dh = c_.head_dim();
  const std::int64_t hd = std::int64_t(H) * dh, kvd = std::int64_t(c_.Hkv) * dh;
  require(N == std::int64_t(batch) * seq && x.cols() == d, "layer ", index_, ": input is ",
          x.rows(), "x", x.cols(), ", expected ", std::int64_t(batch) * seq, "x", d);
  require(plan != nullptr && plan->kind == PlanKind::Plain, "layer ", index_,
          ": Wiola 13M needs the plain causal plan");
  s.plan = plan;
  s.batch = batch;
  s.seq = seq;
  s.x = x;

  // RMSNorm (no δ).
  s.xn = alloc(N, d);
  s.rstd1 = alloc_stats(N, 1);
  be_.wrmsnorm_fwd(x, w_.attn_gamma, Tensor{}, c_.eps, s.xn, s.rstd1);

  // Projections and spiral RoPE.
  s.q_pre = alloc(N, hd);
  be_.linear_fwd(s.xn, w_.wq, s.q_pre, false);
  s.q = alloc(N, hd);
  be_.srpe_fwd(s.q_pre, plan->pos_q, sh_.srpe_cos, sh_.srpe_sin, dh, RotaryPairs::Interleaved,
               s.q);
  s.k = alloc(N, kvd);
  be_.linear_fwd(s.xn, w_.wk, s.k, false);
  be_.srpe_fwd(s.k, plan->pos_kv, sh_.srpe_cos, sh_.srpe_sin, dh, RotaryPairs::Interleaved, s.k);
  s.v = alloc(N, kvd);
  be_.linear_fwd(s.xn, w_.wv, s.v, false);

  // The gate: m = head mean of the queries, c = its prefix mean (causal),
  // g = σ(W2·SiLU(W1·c) + b2).
  s.m = alloc(N, dh);
  be_.head_mean_fwd(c_.gate == GateSource::Pre ? s.q_pre : s.q, dh, s.m);
  s.c = alloc(N, dh);
  be_.summary_fwd(SummaryMode::Causal, s.m, batch, seq, s.c);
  s.u = alloc(N, H);
  be_.linear_fwd(s.c, w_.gate_w1, s.u, false);
  const Tensor one = ones(N, H);
  s.su = alloc(N, H);
  be_.silu_mul_fwd(s.u, one, s.su);
  // The bias broadcast to every row is a lookup of row 0 of b2 [1, H].
  s.glog = alloc(N, H);
  be_.embedding_fwd(zero_rows(N), w_.gate_b2, s.glog);
  be_.linear_fwd(s.su, w_.gate_w2, s.glog, true);
  s.g = alloc(N, H);
  be_.sigmoid_mul_fwd(s.glog, one, s.g);

  // g_t^(h) multiplies head h's scores q_t·k_s/√dh: scale the query instead.
  s.qs = alloc(N, hd);
  be_.head_scale_fwd(s.q, s.g, dh, s.qs);
  const AttentionDims dims{batch, seq, H, c_.Hkv, dh};
  s.o = alloc(N, hd);
  s.lse = alloc_stats(N, H);
  be_.attention_fwd(dims, s.qs, s.k, s.v, {}, {}, Tensor{}, plan->index, s.o, s.o, Tensor{},
                    s.lse, Tensor{});
  Tensor a = alloc(N, d);
  be_.linear_fwd(s.o, w_.wo, a, false);

  s.xh = alloc(N, d);
  be_.add(x, a, s.xh);

  // Butterfly FFN.
  s.xn2 = alloc(N, d);
  s.rstd2 = alloc_stats(N, 1);
  be_.wrmsnorm_fwd(s.xh, w_.ffn_gamma, Tensor{}, c_.eps, s.xn2, s.rstd2);
  const std::int64_t dff = c_.dff;
  s.ab = alloc(N, 2 * dff);
  be_.linear_fwd(s.xn2, w_.up, s.ab, false);
  s.r = alloc(N, dff);
  be_.silu_mul_fwd(s.ab.cols_slice(0, dff), s.ab.cols_slice(dff, 2 * dff), s.r);
  be_.linear_fwd(s.xn2, w_.bypass, s.r, true);
  Tensor f = alloc(N, d);
  be_.linear_fwd(s.r, w_.down, f, false);
  Tensor out = alloc(N, d);
  be_.add(s.xh, f, out);
  return out;
}

Tensor Wiola13mLayer::backward(const Tensor& dy, Layer13mSaved& s, WeightGradQueue* defer) {
  require(s.plan != nullptr, "layer ", index_, ": backward without a forward");
  const DevicePlan& plan = *s.plan;
  const std::int64_t N = dy.rows();
  const int d = c_.d, H = c_.H, dh = c_.head_dim();
  const std::int64_t hd = std::int64_t(H) * dh, kvd = std::int64_t(c_.Hkv) * dh,
                     dff = c_.dff;
  g_ = Layer13mWeights::grads(*store_, index_);
  defer_ = defer;

  // FFN: dh' = dy + RMSNorm'ᵀ(FFN'ᵀ dy).
  Tensor dxh = alloc(N, d);
  be_.copy(dy, dxh);
  Tensor dr = alloc(N, dff);
  be_.linear_bwd_data(dy, w_.down, dr, false);
  linear_weight_grad(be_, defer_, dy, s.r, g_.down);
  Tensor dab = alloc(N, 2 * dff);
  be_.silu_mul_bwd(s.ab.cols_slice(0, dff), s.ab.cols_slice(dff, 2 * dff), dr,
                   dab.cols_slice(0, dff), dab.cols_slice(dff, 2 * dff));
  Tensor dxn2 = alloc(N, d);
  be_.linear_bwd_data(dab, w_.up, dxn2, false);
  linear_weight_grad(be_, defer_, dab, s.xn2, g_.up);
  be_.linear_bwd_data(dr, w_.bypass, dxn2, true);
  linear_weight_grad(be_, defer_, dr, s.xn2, g_.bypass);
  be_.wrmsnorm_bwd(s.xh, w_.ffn_gamma, Tensor{}, s.rstd2, dxn2, dxh, true, g_.ffn_gamma,
                   Tensor{});

  // Attention core.
  Tensor d_o = alloc(N, hd);
  be_.linear_bwd_data(dxh, w_.wo, d_o, false);
  if (defer_) {
    // The queued dWo reads dh' after the last norm below has added into it.
    Tensor dh_out = alloc(N, d);
    be_.copy(dxh, dh_out);
    linear_weight_grad(be_, defer_, dh_out, s.o, g_.wo);
  } else {
    linear_weight_grad(be_, defer_, dxh, s.o, g_.wo);
  }
  Tensor dqs = alloc(N, hd), dk = alloc(N, kvd), dv = alloc(N, kvd);
  const AttentionDims dims{s.batch, s.seq, H, c_.Hkv, dh};
  be_.attention_bwd(dims, s.qs, s.k, s.v, {}, {}, Tensor{}, plan.index, s.o, Tensor{}, s.lse,
                    Tensor{}, d_o, dqs, dk, dv, {}, {}, Tensor{});

  // The gate: dq (rotated) = g · dqs, dg = Σ_j dqs·q per head.
  Tensor dg = alloc(N, H);
  Tensor dq = dqs;
  be_.head_scale_bwd(s.q, s.g, dqs, dh, dq, dg);
  const Tensor one = ones(N, H);
  Tensor dglog = alloc(N, H), unused = alloc(N, H);
  be_.sigmoid_mul_bwd(s.glog, one, dg, dglog, unused);
  be_.embedding_bwd(zero_rows(N), dglog, g_.gate_b2);  // Σ over rows into db2
  linear_weight_grad(be_, defer_, dglog, s.su, g_.gate_w2);
  Tensor dsu = alloc(N, H);
  be_.linear_bwd_data(dglog, w_.gate_w2, dsu, false);
  Tensor du = alloc(N, H);
  be_.silu_mul_bwd(s.u, one, dsu, du, unused);
  linear_weight_grad(be_, defer_, du, s.c, g_.gate_w1);
  Tensor dc = alloc(N, dh);
  be_.linear_bwd_data(du, w_.gate_w1, dc, false);
  Tensor dm = alloc(N, dh);  // zero; summary_bwd adds
  be_.summary_bwd(SummaryMode::Causal, dc, s.batch, s.seq, dm);
  if (c_.gate == GateSource::Post) be_.head_mean_bwd(dm, dh, dq, true);

  // Spiral RoPE backward, then the gate's path into the pre-rotation queries.
  be_.srpe_bwd(dq, plan.pos_q, sh_.srpe_cos, sh_.srpe_sin, dh, RotaryPairs::Interleaved, dq);
  be_.srpe_bwd(dk, plan.pos_kv, sh_.srpe_cos, sh_.srpe_sin, dh, RotaryPairs::Interleaved, dk);
  if (c_.gate == GateSource::Pre) be_.head_mean_bwd(dm, dh, dq, true);

  linear_weight_grad(be_, defer_, dq, s.xn, g_.wq);
  linear_weight_grad(be_, defer_, dk, s.xn, g_.wk);
  linear_weight_grad(be_, defer_, dv, s.xn, g_.wv);
  Tensor dxn = alloc(N, d);
  be_.linear_bwd_data(dq, w_.wq, dxn, false);
  be_.linear_bwd_data(dk, w_.wk, dxn, true);
  be_.linear_bwd_data(dv, w_.wv, dxn, true);
  be_.wrmsnorm_bwd(s.x, w_.attn_gamma, Tensor{}, s.rstd1, dxn, dxh, true, g_.attn_gamma,
                   Tensor{});
  s = Layer13mSaved{};
  g_ = Layer13mWeights{};
  if (defer_) defer_->layer_done(index_);
  defer_ = nullptr;
  return dxh;
}

}  // namespace wiola
