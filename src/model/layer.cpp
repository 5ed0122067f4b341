#include "model/layer.hpp"

#include <initializer_list>

#include "core/error.hpp"
#include "core/param_names.hpp"

namespace wiola {

namespace {

Tensor upload_i32(Backend& be, const std::vector<std::int32_t>& host) {
  Tensor t = be.alloc(DType::I32, static_cast<std::int64_t>(host.size()), 1);
  if (!host.empty()) be.from_host(host.data(), t);
  return t;
}

LayerWeights views(const ParamStore& store, int layer, bool grads) {
  namespace role = param_names::role;
  auto get = [&](const char* r) {
    const std::string name = param_names::layer_param(layer, r);
    return grads ? store.grad(name) : store.param(name);
  };
  LayerWeights w;
  w.attn_gamma = get(role::kAttnNormGamma);
  w.attn_delta = get(role::kAttnNormDelta);
  w.wq = get(role::kQProj);
  w.wk = get(role::kKProj);
  w.wv = get(role::kVProj);
  w.wck = get(role::kCtxKProj);
  w.wcv = get(role::kCtxVProj);
  w.wgate = get(role::kGateProj);
  w.wo = get(role::kOProj);
  w.phi = get(role::kCtxLogit);
  w.ffn_gamma = get(role::kFfnNormGamma);
  w.ffn_delta = get(role::kFfnNormDelta);
  w.a_gate = get(role::kAGate);
  w.a_up = get(role::kAUp);
  w.a_down = get(role::kADown);
  w.b_up = get(role::kBUp);
  w.b_down = get(role::kBDown);
  w.fuse = get(role::kFuse);
  // [first; ...; last] as one [rows, in] matrix: neighbours in the flat
  // buffer. Where they are not (padding between them), an undefined Tensor,
  // or an error when `required`.
  auto stacked = [&](std::initializer_list<const char*> roles, bool required = true) {
    const ParamLayout& layout = store.layout();
    const ParamSpec& first = layout.find(param_names::layer_param(layer, *roles.begin()));
    std::int64_t rows = 0;
    for (const char* r : roles) {
      const ParamSpec& p = layout.find(param_names::layer_param(layer, r));
      if (p.offset != first.offset + rows * first.cols || p.cols != first.cols) {
        require(!required, "layer ", layer, ": ", p.name, " does not follow its neighbour in "
                "the parameter buffer (the canonical order changed?)");
        return Tensor{};
      }
      rows += p.rows;
    }
    const Tensor& flat = grads ? store.grads() : store.params();
    return flat.range(first.offset, rows * first.cols).reshape(rows, first.cols);
  };
  w.wqg = stacked({role::kQProj, role::kGateProj});
  w.wkv = stacked({role::kKProj, role::kVProj});
  w.wckv = stacked({role::kCtxKProj, role::kCtxVProj});
  w.a_gate_up = stacked({role::kAGate, role::kAUp});
  w.wqgkv = stacked({role::kQProj, role::kGateProj, role::kKProj, role::kVProj}, false);
  return w;
}

}  // namespace

LayerWeights LayerWeights::params(const ParamStore& store, int layer) {
  return views(store, layer, false);
}
LayerWeights LayerWeights::grads(const ParamStore& store, int layer) {
  return views(store, layer, true);
}

DevicePlan upload_plan(Backend& be, const TokenPlan& p) {
  DevicePlan d;
  d.kind = p.kind;
  d.index.n_queries = upload_i32(be, p.n_queries);
  d.index.key_prefix = upload_i32(be, p.key_prefix);
  d.index.key_extra = upload_i32(be, p.key_extra);
  d.index.ctx_row = upload_i32(be, p.ctx_row);
  d.pos_q = upload_i32(be, p.pos_q);
  d.pos_kv = p.pos_kv == p.pos_q ? d.pos_q : upload_i32(be, p.pos_kv);
  if (p.kind != PlanKind::Plain) {
    d.merge_a = upload_i32(be, p.merge_a);
    d.merge_b = upload_i32(be, p.merge_b);
  }
  if (p.kind == PlanKind::Paper) d.unmerge = upload_i32(be, p.unmerge);
  if (p.kind != PlanKind::Plain) d.groups = upload_i32(be, p.groups);
  return d;
}

std::int64_t DevicePlan::merged_tokens(Backend& be, int batch, int seq) const {
  if (kind == PlanKind::Plain) return std::int64_t(batch) * seq;
  std::vector<std::int32_t> host(static_cast<std::size_t>(groups.numel()));
  be.to_host(groups, host.data());
  std::int64_t n = 0;
  for (std::int32_t g : host) n += g;
  return n;
}

DecoderLayer::DecoderLayer(const LayerShared& shared, int index, LayerWeights w,
                           const ParamStore& grads)
    : sh_(shared), be_(*shared.backend), c_(*shared.config), index_(index), w_(std::move(w)),
      store_(&grads) {}

Tensor DecoderLayer::alloc(std::int64_t rows, std::int64_t cols) const {
  return be_.alloc(sh_.dtype, rows, cols);
}

Tensor DecoderLayer::alloc_stats(std::int64_t rows, std::int64_t cols) const {
  return be_.alloc(wide_dtype(sh_.dtype), rows, cols);
}

Tensor DecoderLayer::output(std::int64_t rows, std::int64_t cols) const {
  return be_.alloc_uninit(sh_.dtype, rows, cols);
}

Tensor DecoderLayer::output_stats(std::int64_t rows, std::int64_t cols) const {
  return be_.alloc_uninit(wide_dtype(sh_.dtype), rows, cols);
}

bool DecoderLayer::joins_qkv(const DevicePlan& plan) const {
  return plan.kind != PlanKind::Paper && be_.joins_products() && w_.wqgkv.defined();
}

std::shared_ptr<const DevicePlan> DecoderLayer::atm_plan(const Tensor& xn, int batch,
                                                         int seq) const {
  Tensor rho = output_stats(xn.rows(), 1);
  be_.row_cosine_next(xn, batch, seq, rho);
  auto plan = std::make_shared<DevicePlan>();
  plan->kind = c_.atm == AtmMode::Paper ? PlanKind::Paper : PlanKind::Causal;
  const auto index = [&](std::int64_t rows) { return be_.alloc_uninit(DType::I32, rows, 1); };
  const std::int64_t n = xn.rows();
  plan->index = {index(batch), index(n), index(n), index(n)};
  plan->pos_q = index(n);
  plan->pos_kv = index(n);
  plan->merge_a = index(n);
  plan->merge_b = index(n);
  if (plan->kind == PlanKind::Paper) plan->unmerge = index(n);
  plan->groups = index(batch);
  be_.atm_plan(rho, batch, seq, c_.tau, c_.atm, c_.summary, *plan);
  return plan;
}

Tensor DecoderLayer::forward(const Tensor& x, std::span<const Tensor> ctx,
                             std::shared_ptr<const DevicePlan> plan, int batch, int seq,
                             LayerSaved& s) {
  const std::int64_t N = x.rows();
  const int d = c_.d;
  require(N == std::int64_t(batch) * seq && x.cols() == d, "layer ", index_, ": input is ",
          x.rows(), "x", x.cols(), ", expected ", std::int64_t(batch) * seq, "x", d);
  s.batch = batch;
  s.seq = seq;
  s.x = x;
  s.xn = output(N, d);
  s.rstd1 = output_stats(N, 1);
  be_.wrmsnorm_fwd(x, w_.attn_gamma, w_.attn_delta, c_.eps, s.xn, s.rstd1);

  // The plan is plain unless the caller handed us nothing: then ATM decides.
  if (!plan) plan = atm_plan(s.xn, batch, seq);
  s.plan = plan;

  Tensor xq = s.xn, xkv = s.xn;
  // Joined (joins_qkv), a causal plan merges K and V after their product.
  if (plan->kind != PlanKind::Plain && !joins_qkv(*plan)) {
    s.xm = output(N, d);  // every row written: a merged one, or zero past T' (paper)
    be_.merge_rows_fwd(s.xn, plan->merge_a, plan->merge_b, s.xm);
    xkv = s.xm;
    if (plan->kind == PlanKind::Paper) xq = s.xm;
  }
  Tensor a = attention_forward(xq, xkv, ctx, *plan, batch, seq, s);
  if (plan->kind == PlanKind::Paper) {
    // Copy each merged output back to every member of its group.
    // A paper plan has no extra key rows: its key_extra is all -1, the
    // missing second index of every row.
    s.a_merged = a;
    a = output(N, d);  // every token row is its group's row
    be_.merge_rows_fwd(s.a_merged, plan->unmerge, plan->index.key_extra, a);
  }

  return ffn_residual(x, a, s);
}

Tensor DecoderLayer::ffn_residual(const Tensor& x, const Tensor& a, LayerSaved& s) const {
  const std::int64_t N = x.rows();
  const int d = c_.d;
  s.xh = output(N, d);
  s.xn2 = output(N, d);
  s.rstd2 = output_stats(N, 1);
  be_.add_wrmsnorm_fwd(x, a, w_.ffn_gamma, w_.ffn_delta, c_.eps, s.xh, s.xn2, s.rstd2);
  return dsff_forward(s.xn2, s);
}

// The same layer for new rows of one sequence whose earlier keys and values
// are cached. Why the backend's attention op rather than a loop of its own:
// the op's index tensors say exactly "query row i sees key rows [0, past+i]"
// (decode_plan), so the one reference kernel — the one training and the
// tests check — computes the cached step too, on any backend. Its price: the
// call's block has past + n rows, and the op writes zeros into the past
// padding rows of the outputs, work of the same order as reading the cached
// keys (O(past · H·dh) per layer and step).
Tensor DecoderLayer::forward_cached(const Tensor& x, std::span<const Tensor> ctx,
                                    const DevicePlan& plan, int past, const LayerKvCache& kv,
                                    const DecodeScratch& scratch) const {
  const std::int64_t n = x.rows(), total = past + n;
  const int d = c_.d, dh = c_.head_dim();
  const std::int64_t hd = std::int64_t(c_.H) * dh;
  require(x.cols() == d && n >= 1, "layer ", index_, ": cached input is ", x.rows(), "x",
          x.cols());
  require(plan.kind == PlanKind::Plain && !ctx.empty(), "layer ", index_,
          ": a cached step needs a plain plan and a context summary");
  require(total <= kv.k.rows(), "layer ", index_, ": ", total, " positions exceed the cache of ",
          kv.k.rows());
  LayerSaved s;
  s.xn = alloc(n, d);
  s.rstd1 = alloc_stats(n, 1);
  be_.wrmsnorm_fwd(x, w_.attn_gamma, w_.attn_delta, c_.eps, s.xn, s.rstd1);

  const Tensor q = scratch.q.rows_slice(0, total), q_new = q.rows_slice(0, n);
  be_.linear_fwd(s.xn, w_.wq, q_new, false);
  be_.srpe_fwd(q_new, plan.pos_q, sh_.srpe_cos, sh_.srpe_sin, dh, RotaryPairs::Half, q_new);
  // K and V as two products (not one over [wk; wv] as in training): each writes
  // straight into its own cache tensor.
  const Tensor k_new = kv.k.rows_slice(past, total), v_new = kv.v.rows_slice(past, total);
  be_.linear_fwd(s.xn, w_.wk, k_new, false);
  be_.srpe_fwd(k_new, plan.pos_kv, sh_.srpe_cos, sh_.srpe_sin, dh, RotaryPairs::Half, k_new);
  be_.linear_fwd(s.xn, w_.wv, v_new, false);
  s.glog = alloc(n, hd);
  be_.linear_fwd(s.xn, w_.wgate, s.glog, false);
  context_kv(ctx, s);

  const AttentionDims dims{1, static_cast<int>(total), c_.H, c_.Hkv, dh};
  const Tensor o = scratch.o.rows_slice(0, total);
  be_.attention_fwd(dims, q, kv.k.rows_slice(0, total), kv.v.rows_slice(0, total), s.ctx_k,
                    s.ctx_v, w_.phi, plan.index, o, scratch.o_self.rows_slice(0, total),
                    scratch.o_ctx.rows_slice(0, total), scratch.lse_self.rows_slice(0, total),
                    scratch.lse_ctx.rows_slice(0, total));
  const Tensor a = gated_output(s.glog, o.rows_slice(0, n), s);
  return ffn_residual(x, a, s);
}

Tensor DecoderLayer::attention_forward(const Tensor& xq, const Tensor& xkv,
                                       std::span<const Tensor> ctx, const DevicePlan& plan,
                                       int batch, int seq, LayerSaved& s) {
  const std::int64_t N = xq.rows();
  const int dh = c_.head_dim();
  const std::int64_t hd = std::int64_t(c_.H) * dh, kvd = std::int64_t(c_.Hkv) * dh;
  require(!ctx.empty(), "layer ", index_, ": GCLA needs at least one context summary");

  // Products that share an input run as one GEMM over their weights stacked
  // in the parameter buffer: K and V, each summary's context K and V. Q and
  // the gate logits are a stacked product into the halves of one tensor: one
  // GEMM on a device, two on the CPU (linear_fwd_stacked), whose OpenBLAS
  // would run some small models' single product above its small-matrix bound
  // instead of below it, which sums in another order (their weight gradient
  // is one product everywhere: it keeps its bits). Every mode runs the same
  // products (query side on xq, key/value side on xkv), so causal ATM with
  // nothing merged stays plain GCLA bit for bit (joined too: merging and
  // unmerging single rows copies them).
  if (joins_qkv(plan)) {
    // [Q | G | K | V] of the token rows in one product. A causal plan's key
    // and value rows are merged token rows; the merge is a mean, which
    // commutes with the product (up to rounding): K and V merged after it.
    const Tensor qgkv = output(N, 2 * hd + 2 * kvd);
    const std::int64_t parts[] = {hd, hd, 2 * kvd};
    be_.linear_fwd_stacked(xq, w_.wqgkv, parts, qgkv);
    s.qg = qgkv.cols_slice(0, 2 * hd);
    s.kv = qgkv.cols_slice(2 * hd, 2 * hd + 2 * kvd);
    if (plan.kind == PlanKind::Causal) {
      const Tensor tokens_kv = s.kv;
      s.kv = output(N, 2 * kvd);  // every row written: a group's, or a pair's first member
      be_.merge_rows_fwd(tokens_kv, plan.merge_a, plan.merge_b, s.kv);
    }
  } else {
    s.qg = output(N, 2 * hd);
    const std::int64_t q_and_gate[] = {hd, hd};
    be_.linear_fwd_stacked(xq, w_.wqg, q_and_gate, s.qg);
    s.kv = output(N, 2 * kvd);
    be_.linear_fwd(xkv, w_.wkv, s.kv, false);
  }
  s.q = s.qg.cols_slice(0, hd);
  s.glog = s.qg.cols_slice(hd, 2 * hd);
  s.k = s.kv.cols_slice(0, kvd);
  s.v = s.kv.cols_slice(kvd, 2 * kvd);
  // SRPE: inside the attention op where its kernels rotate as they read (Q
  // rotated in place, K left as its product wrote it), else passes of its own.
  const bool fused_srpe = be_.attention_takes_srpe();
  if (!fused_srpe) {
    be_.srpe_fwd(s.q, plan.pos_q, sh_.srpe_cos, sh_.srpe_sin, dh, RotaryPairs::Half, s.q);
    be_.srpe_fwd(s.k, plan.pos_kv, sh_.srpe_cos, sh_.srpe_sin, dh, RotaryPairs::Half, s.k);
  }

  context_kv(ctx, s);

  const AttentionDims dims{batch, seq, c_.H, c_.Hkv, dh};
  // The kernel writes every row, padding rows as zeros (ctx is never empty here).
  s.o = output(N, hd);
  s.o_self = output(N, hd);
  s.o_ctx = output(N, hd);
  s.lse_self = output_stats(N, c_.H);
  s.lse_ctx = output_stats(N, c_.H);
  s.y = output(N, hd);  // σ(G) ⊙ O, made by the attention op
  be_.attention_fwd(dims, s.q, s.k, s.v, s.ctx_k, s.ctx_v, w_.phi, plan.index, s.o, s.o_self,
                    s.o_ctx, s.lse_self, s.lse_ctx, AttentionGate{s.glog, s.y},
                    fused_srpe ? srpe(plan) : AttentionRotary{});
  return output_projection(s.y);
}

void DecoderLayer::context_kv(std::span<const Tensor> ctx, LayerSaved& s) const {
  const std::int64_t kvd = std::int64_t(c_.Hkv) * c_.head_dim();
  s.ctx_k.clear();
  s.ctx_v.clear();
  // [Kc | Vc] of each summary, one after another.
  const Tensor all = output(total_rows(ctx), 2 * kvd);
  const Tensor joined = be_.joins_products() ? rows_joined(ctx) : Tensor{};
  if (joined.defined()) be_.linear_fwd(joined, w_.wckv, all, false);
  s.ckv = rows_like(all, ctx);
  for (std::size_t c = 0; c < ctx.size(); ++c) {  // else one product over [wck; wcv] each
    if (!joined.defined()) be_.linear_fwd(ctx[c], w_.wckv, s.ckv[c], false);
    s.ctx_k.push_back(s.ckv[c].cols_slice(0, kvd));
    s.ctx_v.push_back(s.ckv[c].cols_slice(kvd, 2 * kvd));
  }
}

AttentionRotary DecoderLayer::srpe(const DevicePlan& plan) const {
  return AttentionRotary{plan.pos_q, plan.pos_kv, sh_.srpe_cos, sh_.srpe_sin, RotaryPairs::Half};
}

Tensor DecoderLayer::gated_output(const Tensor& glog, const Tensor& o, LayerSaved& s) const {
  s.y = output(o.rows(), o.cols());
  be_.sigmoid_mul_fwd(glog, o, s.y);
  return output_projection(s.y);
}

Tensor DecoderLayer::output_projection(const Tensor& y) const {
  Tensor a = output(y.rows(), c_.d);
  be_.linear_fwd(y, w_.wo, a, false);
  return a;
}

Tensor DecoderLayer::dsff_forward(const Tensor& xn2, LayerSaved& s) const {
  const std::int64_t N = xn2.rows();
  const int d = c_.d;
  s.gu = output(N, 2 * c_.dA);  // G_A x and U_A x: one product over [a_gate; a_up]
  be_.linear_fwd(xn2, w_.a_gate_up, s.gu, false);
  s.ga = s.gu.cols_slice(0, c_.dA);
  s.ua = s.gu.cols_slice(c_.dA, 2 * c_.dA);
  s.ub = output(N, c_.dB);
  be_.linear_fwd(xn2, w_.b_up, s.ub, false);
  s.ha = output(N, c_.dA);
  s.hb = output(N, c_.dB);
  be_.dsff_act_fwd(s.ga, s.ua, s.ub, s.ha, s.hb);
  // a and b live side by side so the fusion gate is one GEMM over [a; b].
  s.ab = output(N, 2 * d);  // both halves written below
  const Tensor a = s.ab.cols_slice(0, d), b = s.ab.cols_slice(d, 2 * d);
  be_.linear_fwd(s.ha, w_.a_down, a, false);
  be_.linear_fwd(s.hb, w_.b_down, b, false);
  s.fl = output(N, d);
  be_.linear_fwd(s.ab, w_.fuse, s.fl, false);
  Tensor out = output(N, d);  // X' = X½ + DSFF
  be_.fusion_add_fwd(s.fl, a, b, s.xh, out);
  return out;
}

Tensor DecoderLayer::backward(const Tensor& dy, std::span<const Tensor> ctx,
                              std::span<const Tensor> dctx, LayerSaved& s,
                              WeightGradQueue* defer) {
  const std::int64_t N = dy.rows();
  const int d = c_.d;
  require(s.plan != nullptr, "layer ", index_, ": backward without a forward");
  const DevicePlan& plan = *s.plan;
  g_ = LayerWeights::grads(*store_, index_);
  defer_ = defer;

  // Residual: dX½ = dX' + WRMSNorm'ᵀ(DSFF'ᵀ dX').
  Tensor dxh = output(N, d);
  be_.copy(dy, dxh);
  Tensor dxn2 = dsff_backward(dy, s);
  be_.wrmsnorm_bwd(s.xh, w_.ffn_gamma, w_.ffn_delta, s.rstd2, dxn2, dxh, true, g_.ffn_gamma,
                   g_.ffn_delta);

  // Attention branch: dA = dX½ (through the unmerge copy in paper mode).
  Tensor da = dxh;
  if (defer_ && plan.kind != PlanKind::Paper) {
    // The queued dWo reads dA after the last norm below has added into dX½.
    da = output(N, d);
    be_.copy(dxh, da);
  }
  if (plan.kind == PlanKind::Paper) {
    da = alloc(N, d);  // added into
    be_.merge_rows_bwd(dxh, plan.unmerge, plan.index.key_extra, da);  // key_extra: all -1
  }
  Tensor dxkv;
  Tensor dxq = attention_backward(da, ctx, dctx, s, dxkv);
  Tensor dxn;
  switch (plan.kind) {
    case PlanKind::Plain:
      dxn = dxq;  // attention_backward already added the key/value path
      break;
    case PlanKind::Paper:
      dxn = alloc(N, d);
      be_.merge_rows_bwd(dxq, plan.merge_a, plan.merge_b, dxn);
      break;
    case PlanKind::Causal:
      dxn = dxq;  // joined (joins_qkv): the key/value path is in it already
      if (dxkv.defined()) be_.merge_rows_bwd(dxkv, plan.merge_a, plan.merge_b, dxn);
      break;
  }
  // dX = dX½ + WRMSNorm'ᵀ dX̃
  be_.wrmsnorm_bwd(s.x, w_.attn_gamma, w_.attn_delta, s.rstd1, dxn, dxh, true, g_.attn_gamma,
                   g_.attn_delta);
  s = LayerSaved{};
  g_ = LayerWeights{};
  if (defer_) defer_->layer_done(index_);
  defer_ = nullptr;
  return dxh;
}

Tensor DecoderLayer::attention_backward(const Tensor& da, std::span<const Tensor> ctx,
                                        std::span<const Tensor> dctx, LayerSaved& s,
                                        Tensor& dxkv) {
  const DevicePlan& plan = *s.plan;
  const std::int64_t N = da.rows();
  const int dh = c_.head_dim();
  const bool fused_srpe = be_.attention_takes_srpe();  // as in the forward
  const std::int64_t hd = std::int64_t(c_.H) * dh, kvd = std::int64_t(c_.Hkv) * dh;
  const Tensor& xq = plan.kind == PlanKind::Paper ? s.xm : s.xn;
  const Tensor& xkv = plan.kind == PlanKind::Plain ? s.xn : s.xm;

  Tensor dyv = output(N, hd);
  be_.linear_bwd_data(da, w_.wo, dyv, false);
  linear_weight_grad(be_, defer_, da, s.y, g_.wo);
  // dQ beside the gate logits' gradient, dK beside dV, each context dK beside
  // its dV: the products of the forward's stacked weights, backwards.
  // The attention op writes them whole, and dO and dG from dY (its gate).
  // Joined (joins_qkv): [dQ | dG | dK | dV] of the token rows in one tensor,
  // as the forward's (a causal plan's dK and dV, of the merged rows, go
  // there through the merge's adjoint below).
  const bool joined_qkv = joins_qkv(plan);
  const Tensor dqgkv = joined_qkv ? output(N, 2 * hd + 2 * kvd) : Tensor{};
  const Tensor dqg = joined_qkv ? dqgkv.cols_slice(0, 2 * hd) : output(N, 2 * hd);
  const Tensor dkv = joined_qkv && plan.kind == PlanKind::Plain
                         ? dqgkv.cols_slice(2 * hd, 2 * hd + 2 * kvd)
                         : output(N, 2 * kvd);
  const Tensor d_o = output(N, hd);
  const Tensor dq = dqg.cols_slice(0, hd), dglog = dqg.cols_slice(hd, 2 * hd);
  const Tensor dk = dkv.cols_slice(0, kvd), dv = dkv.cols_slice(kvd, 2 * kvd);
  const Tensor dckv_all = output(total_rows(s.ctx_k), 2 * kvd);  // as the forward's s.ckv
  const std::vector<Tensor> dckv = rows_like(dckv_all, s.ctx_k);
  std::vector<Tensor> dck, dcv;
  for (const Tensor& t : dckv) {
    dck.push_back(t.cols_slice(0, kvd));
    dcv.push_back(t.cols_slice(kvd, 2 * kvd));
  }
  const AttentionDims dims{s.batch, s.seq, c_.H, c_.Hkv, dh};
  be_.attention_bwd(dims, s.q, s.k, s.v, s.ctx_k, s.ctx_v, w_.phi, plan.index, s.o_self, s.o_ctx,
                    s.lse_self, s.lse_ctx, d_o, dq, dk, dv, dck, dcv, g_.phi,
                    AttentionGateGrad{s.glog, s.o, dyv, dglog},
                    fused_srpe ? srpe(plan) : AttentionRotary{});

  // Context projections: gradients into the summaries and their weights,
  // one product each over all summaries where the backend joins them.
  const Tensor joined = be_.joins_products() ? rows_joined(ctx) : Tensor{};
  const Tensor djoined = joined.defined() ? rows_joined(dctx) : Tensor{};
  if (djoined.defined()) {
    linear_weight_grad(be_, defer_, dckv_all, joined, g_.wckv);
    be_.linear_bwd_data(dckv_all, w_.wckv, djoined, true);
  } else {
    for (std::size_t c = 0; c < ctx.size(); ++c) {
      linear_weight_grad(be_, defer_, dckv[c], ctx[c], g_.wckv);
      be_.linear_bwd_data(dckv[c], w_.wckv, dctx[c], true);
    }
  }

  if (!fused_srpe) {
    be_.srpe_bwd(dq, plan.pos_q, sh_.srpe_cos, sh_.srpe_sin, dh, RotaryPairs::Half, dq);
    be_.srpe_bwd(dk, plan.pos_kv, sh_.srpe_cos, sh_.srpe_sin, dh, RotaryPairs::Half, dk);
  }

  if (joined_qkv) {  // one product each way over [W_q; W_gate; W_k; W_v]
    if (plan.kind == PlanKind::Causal)
      be_.causal_merge_bwd(dkv, plan.merge_a, plan.merge_b, plan.groups, s.batch, s.seq,
                           dqgkv.cols_slice(2 * hd, 2 * hd + 2 * kvd));
    linear_weight_grad(be_, defer_, dqgkv, xq, g_.wqgkv);
    Tensor dxn = output(N, c_.d);
    const std::int64_t parts[] = {hd, hd, 2 * kvd};
    be_.linear_bwd_data_stacked(dqgkv, w_.wqgkv, parts, dxn, false);
    return dxn;
  }
  linear_weight_grad(be_, defer_, dqg, xq, g_.wqg);
  // On the CPU two products (dQ·W_q, then + dG·W_gate), not one over twice
  // the depth: the sum keeps the order (and so the bits) it always had there.
  Tensor dxq = output(N, c_.d);
  const std::int64_t q_and_gate[] = {hd, hd};
  be_.linear_bwd_data_stacked(dqg, w_.wqg, q_and_gate, dxq, false);

  linear_weight_grad(be_, defer_, dkv, xkv, g_.wkv);
  if (plan.kind == PlanKind::Paper) {
    // Keys and values came from the query rows: add straight into dxq.
    be_.linear_bwd_data(dkv, w_.wkv, dxq, true);
  } else {
    // Plain: a separate sum added afterwards, so that causal ATM with nothing
    // merged (which adds dxkv through merge_rows_bwd) matches it bit for bit.
    dxkv = output(N, c_.d);
    be_.linear_bwd_data(dkv, w_.wkv, dxkv, false);
    if (plan.kind == PlanKind::Plain) be_.axpy(1.0, dxkv, dxq);
  }
  return dxq;
}

Tensor DecoderLayer::dsff_backward(const Tensor& dout, LayerSaved& s) {
  const std::int64_t N = dout.rows();
  const int d = c_.d;
  const Tensor a = s.ab.cols_slice(0, d), b = s.ab.cols_slice(d, 2 * d);
  Tensor dfl = output(N, d), dab = output(N, 2 * d);
  const Tensor da = dab.cols_slice(0, d), db = dab.cols_slice(d, 2 * d);
  be_.fusion_bwd(s.fl, a, b, dout, dfl, da, db);
  linear_weight_grad(be_, defer_, dfl, s.ab, g_.fuse);
  be_.linear_bwd_data(dfl, w_.fuse, dab, true);

  Tensor dha = output(N, c_.dA);
  be_.linear_bwd_data(da, w_.a_down, dha, false);
  linear_weight_grad(be_, defer_, da, s.ha, g_.a_down);
  Tensor dhb = output(N, c_.dB);
  be_.linear_bwd_data(db, w_.b_down, dhb, false);
  linear_weight_grad(be_, defer_, db, s.hb, g_.b_down);

  Tensor dub = output(N, c_.dB);
  Tensor dgu = output(N, 2 * c_.dA);  // d(G_A x) beside d(U_A x)
  be_.dsff_act_bwd(s.ga, s.ua, dha, s.ub, dhb, dgu.cols_slice(0, c_.dA),
                   dgu.cols_slice(c_.dA, 2 * c_.dA), dub);

  Tensor dxn2 = output(N, d);
  be_.linear_bwd_data(dub, w_.b_up, dxn2, false);
  linear_weight_grad(be_, defer_, dub, s.xn2, g_.b_up);
  be_.linear_bwd_data(dgu, w_.a_gate_up, dxn2, true);
  linear_weight_grad(be_, defer_, dgu, s.xn2, g_.a_gate_up);
  return dxn2;
}

}  // namespace wiola
