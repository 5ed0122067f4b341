// The fronts of the layer ops: embedding, WRMSNorm, SRPE, the per-head maps,
// gates and activations, summaries, ATM row maps and the loss. Each checks
// its arguments once for every backend, then runs the backend's
// implementation under the observer. Index values are not read here (on a
// device that would synchronise): the model validates tokens and positions on
// the host, the CPU backend checks the values it reads, and the CUDA kernels
// never follow one out of bounds.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>

#include "backend/backend.hpp"
#include "backend/op_checks.hpp"

namespace wiola {

namespace {

// Every tensor of an elementwise call: the first one's dtype and shape.
void check_elementwise(OpChecks& c,
                       std::initializer_list<std::pair<const char*, const Tensor*>> tensors) {
  const auto& [first_name, first] = *tensors.begin();
  c.compute(first_name, *first);
  for (auto it = tensors.begin() + 1; it != tensors.end(); ++it)
    c.like(it->first, *it->second, first->rows(), first->cols());
}

void check_batch(const OpChecks& c, int batch, int seq) {
  c.require(batch >= 0 && seq > 0, "batch ", batch, " and seq ", seq, " must be >= 0 and > 0");
}

std::int64_t summary_rows(SummaryMode mode, int batch, int seq) {
  return mode == SummaryMode::Causal ? static_cast<std::int64_t>(batch) * seq : batch;
}

// The arguments wrmsnorm_fwd and add_wrmsnorm_fwd share (x: the rows normalised).
void check_norm_fwd(OpChecks& c, const Tensor& x, const Tensor& gamma, const Tensor& delta,
                    double eps, const Tensor& y, const Tensor& rstd) {
  c.compute("x", x);
  const std::int64_t n = x.rows(), d = x.cols();
  c.require(eps >= 0.0, "eps ", eps, " is negative");
  c.like("gamma", gamma, 1, d);
  if (delta.defined()) c.like("delta", delta, 1, d);  // undefined: plain RMSNorm
  c.like("y", y, n, d);
  c.wide("rstd", rstd, n, 1);
}

}  // namespace

// ---- embedding ------------------------------------------------------------------

void Backend::embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out) {
  OpChecks c(*this, Op::embedding_fwd);
  c.compute("table", table);
  c.index("tokens", tokens, tokens.rows());
  c.like("out", out, tokens.rows(), table.cols());
  c.touches_rows(table, tokens.rows());
  c.run([&] { do_embedding_fwd(tokens, table, out); });
}

void Backend::embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable) {
  OpChecks c(*this, Op::embedding_bwd);
  c.compute("dout", dout);
  c.index("tokens", tokens, tokens.rows());
  c.like("dout", dout, tokens.rows(), dout.cols());
  c.wide("dtable", dtable, dtable.rows(), dout.cols());
  c.touches_rows(dtable, tokens.rows());
  c.accumulates(dtable.rows_slice(0, std::min(dtable.rows(), tokens.rows())));
  c.run([&] { do_embedding_bwd(tokens, dout, dtable); });
}

// ---- WRMSNorm ---------------------------------------------------------------------

void Backend::wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta, double eps,
                           const Tensor& y, const Tensor& rstd) {
  OpChecks c(*this, Op::wrmsnorm_fwd);
  check_norm_fwd(c, x, gamma, delta, eps, y, rstd);
  c.run([&] { do_wrmsnorm_fwd(x, gamma, delta, eps, y, rstd); });
}

void Backend::wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                           const Tensor& rstd, const Tensor& dy, const Tensor& dx, bool accumulate,
                           const Tensor& dgamma, const Tensor& ddelta) {
  OpChecks c(*this, Op::wrmsnorm_bwd);
  c.compute("x", x);
  const std::int64_t n = x.rows(), d = x.cols();
  c.like("gamma", gamma, 1, d);
  c.require(delta.defined() == ddelta.defined(),
            "delta and ddelta must both be given or both be undefined (plain RMSNorm)");
  if (delta.defined()) c.like("delta", delta, 1, d);
  c.wide("rstd", rstd, n, 1);
  c.like("dy", dy, n, d);
  c.like("dx", dx, n, d);
  c.wide("dgamma", dgamma, 1, d);
  if (ddelta.defined()) c.wide("ddelta", ddelta, 1, d);
  if (accumulate) c.accumulates(dx);
  c.accumulates(dgamma);
  if (ddelta.defined()) c.accumulates(ddelta);
  c.run([&] {
    do_wrmsnorm_bwd(x, gamma, delta, rstd, dy, dx, accumulate, dgamma, ddelta);
  });
}

void Backend::add_wrmsnorm_fwd(const Tensor& x, const Tensor& r, const Tensor& gamma,
                               const Tensor& delta, double eps, const Tensor& sum, const Tensor& y,
                               const Tensor& rstd) {
  OpChecks c(*this, Op::add_wrmsnorm_fwd);
  check_norm_fwd(c, x, gamma, delta, eps, y, rstd);
  c.like("r", r, x.rows(), x.cols());
  c.like("sum", sum, x.rows(), x.cols());
  c.run([&] { do_add_wrmsnorm_fwd(x, r, gamma, delta, eps, sum, y, rstd); });
}

// ---- SRPE ---------------------------------------------------------------------------

namespace {

void check_srpe(OpChecks& c, std::string_view in_name, const Tensor& in, const Tensor& positions,
                const Tensor& cos_tab, const Tensor& sin_tab, int head_dim,
                std::string_view out_name, const Tensor& out) {
  c.compute(in_name, in);
  c.require(head_dim > 0 && head_dim % 2 == 0, "head_dim ", head_dim, " must be positive and even");
  c.require(in.cols() % head_dim == 0, in_name, " is ", dims(in),
            ", whose width is not a multiple of head_dim ", head_dim);
  c.like(out_name, out, in.rows(), in.cols());
  c.index("positions", positions, in.rows());
  c.wide("cos_tab", cos_tab, cos_tab.rows(), head_dim / 2);
  c.wide("sin_tab", sin_tab, cos_tab.rows(), head_dim / 2);
  c.touches_rows(cos_tab, positions.rows());
  c.touches_rows(sin_tab, positions.rows());
}

}  // namespace

void Backend::srpe_fwd(const Tensor& x, const Tensor& positions, const Tensor& cos_tab,
                       const Tensor& sin_tab, int head_dim, RotaryPairs pairs, const Tensor& y) {
  OpChecks c(*this, Op::srpe_fwd);
  check_srpe(c, "x", x, positions, cos_tab, sin_tab, head_dim, "y", y);
  c.run([&] { do_srpe_fwd(x, positions, cos_tab, sin_tab, head_dim, pairs, y); });
}

void Backend::srpe_bwd(const Tensor& dy, const Tensor& positions, const Tensor& cos_tab,
                       const Tensor& sin_tab, int head_dim, RotaryPairs pairs, const Tensor& dx) {
  OpChecks c(*this, Op::srpe_bwd);
  check_srpe(c, "dy", dy, positions, cos_tab, sin_tab, head_dim, "dx", dx);
  c.run([&] { do_srpe_bwd(dy, positions, cos_tab, sin_tab, head_dim, pairs, dx); });
}

// ---- per-head maps -------------------------------------------------------------------

void Backend::head_mean_fwd(const Tensor& x, int head_dim, const Tensor& y) {
  OpChecks c(*this, Op::head_mean_fwd);
  c.compute("x", x);
  c.heads("x", x, head_dim);
  c.like("y", y, x.rows(), head_dim);
  c.run([&] { do_head_mean_fwd(x, head_dim, y); });
}

void Backend::head_mean_bwd(const Tensor& dy, int head_dim, const Tensor& dx, bool accumulate) {
  OpChecks c(*this, Op::head_mean_bwd);
  c.compute("dy", dy);
  c.heads("dx", dx, head_dim);
  c.like("dy", dy, dx.rows(), head_dim);
  c.like("dx", dx, dx.rows(), dx.cols());
  if (accumulate) c.accumulates(dx);
  c.run([&] { do_head_mean_bwd(dy, head_dim, dx, accumulate); });
}

void Backend::head_scale_fwd(const Tensor& x, const Tensor& s, int head_dim, const Tensor& y) {
  OpChecks c(*this, Op::head_scale_fwd);
  c.compute("x", x);
  const std::int64_t heads = c.heads("x", x, head_dim);
  c.like("s", s, x.rows(), heads);
  c.like("y", y, x.rows(), x.cols());
  c.run([&] { do_head_scale_fwd(x, s, head_dim, y); });
}

void Backend::head_scale_bwd(const Tensor& x, const Tensor& s, const Tensor& dy, int head_dim,
                             const Tensor& dx, const Tensor& ds) {
  OpChecks c(*this, Op::head_scale_bwd);
  c.compute("x", x);
  const std::int64_t heads = c.heads("x", x, head_dim);
  c.like("s", s, x.rows(), heads);
  c.like("dy", dy, x.rows(), x.cols());
  c.like("dx", dx, x.rows(), x.cols());
  c.like("ds", ds, x.rows(), heads);
  c.run([&] { do_head_scale_bwd(x, s, dy, head_dim, dx, ds); });
}

// ---- gates and activations -------------------------------------------------------------

void Backend::sigmoid_mul_fwd(const Tensor& g, const Tensor& x, const Tensor& y) {
  OpChecks c(*this, Op::sigmoid_mul_fwd);
  check_elementwise(c, {{"g", &g}, {"x", &x}, {"y", &y}});
  c.run([&] { do_sigmoid_mul_fwd(g, x, y); });
}

void Backend::sigmoid_mul_bwd(const Tensor& g, const Tensor& x, const Tensor& dy, const Tensor& dg,
                              const Tensor& dx) {
  OpChecks c(*this, Op::sigmoid_mul_bwd);
  check_elementwise(c, {{"g", &g}, {"x", &x}, {"dy", &dy}, {"dg", &dg}, {"dx", &dx}});
  c.run([&] { do_sigmoid_mul_bwd(g, x, dy, dg, dx); });
}

void Backend::silu_mul_fwd(const Tensor& g, const Tensor& u, const Tensor& y) {
  OpChecks c(*this, Op::silu_mul_fwd);
  check_elementwise(c, {{"g", &g}, {"u", &u}, {"y", &y}});
  c.run([&] { do_silu_mul_fwd(g, u, y); });
}

void Backend::silu_mul_bwd(const Tensor& g, const Tensor& u, const Tensor& dy, const Tensor& dg,
                           const Tensor& du) {
  OpChecks c(*this, Op::silu_mul_bwd);
  check_elementwise(c, {{"g", &g}, {"u", &u}, {"dy", &dy}, {"dg", &dg}, {"du", &du}});
  c.run([&] { do_silu_mul_bwd(g, u, dy, dg, du); });
}

void Backend::gelu_fwd(const Tensor& x, const Tensor& y) {
  OpChecks c(*this, Op::gelu_fwd);
  check_elementwise(c, {{"x", &x}, {"y", &y}});
  c.run([&] { do_gelu_fwd(x, y); });
}

void Backend::gelu_bwd(const Tensor& x, const Tensor& dy, const Tensor& dx) {
  OpChecks c(*this, Op::gelu_bwd);
  check_elementwise(c, {{"x", &x}, {"dy", &dy}, {"dx", &dx}});
  c.run([&] { do_gelu_bwd(x, dy, dx); });
}

namespace {

// The DSFF's two branches (ga of branch A, ub of branch B) act on the same
// rows in one dtype.
void check_same_rows(OpChecks& c, const Tensor& ga, const Tensor& ub) {
  c.require(ub.dtype() == ga.dtype() && ub.rows() == ga.rows(), "ub is ", dims(ub), " ",
            dtype_name(ub.dtype()), " but ga is ", dims(ga), " ", dtype_name(ga.dtype()),
            " (the same rows and dtype)");
}

}  // namespace

// The two branches' activations: each branch's views of one shape, both
// branches over the same rows.
void Backend::dsff_act_fwd(const Tensor& ga, const Tensor& ua, const Tensor& ub, const Tensor& ha,
                           const Tensor& hb) {
  OpChecks c(*this, Op::dsff_act_fwd);
  check_elementwise(c, {{"ga", &ga}, {"ua", &ua}, {"ha", &ha}});
  check_elementwise(c, {{"ub", &ub}, {"hb", &hb}});
  check_same_rows(c, ga, ub);
  c.run([&] { do_dsff_act_fwd(ga, ua, ub, ha, hb); });
}

void Backend::dsff_act_bwd(const Tensor& ga, const Tensor& ua, const Tensor& dha, const Tensor& ub,
                           const Tensor& dhb, const Tensor& dga, const Tensor& dua,
                           const Tensor& dub) {
  OpChecks c(*this, Op::dsff_act_bwd);
  check_elementwise(c, {{"ga", &ga}, {"ua", &ua}, {"dha", &dha}, {"dga", &dga}, {"dua", &dua}});
  check_elementwise(c, {{"ub", &ub}, {"dhb", &dhb}, {"dub", &dub}});
  check_same_rows(c, ga, ub);
  c.run([&] { do_dsff_act_bwd(ga, ua, dha, ub, dhb, dga, dua, dub); });
}

void Backend::fusion_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                         const Tensor& out) {
  OpChecks c(*this, Op::fusion_fwd);
  check_elementwise(c, {{"logits", &logits}, {"a", &a}, {"b", &b}, {"out", &out}});
  c.run([&] { do_fusion_fwd(logits, a, b, out); });
}

void Backend::fusion_bwd(const Tensor& logits, const Tensor& a, const Tensor& b, const Tensor& dout,
                         const Tensor& dlogits, const Tensor& da, const Tensor& db) {
  OpChecks c(*this, Op::fusion_bwd);
  check_elementwise(c, {{"logits", &logits},
                        {"a", &a},
                        {"b", &b},
                        {"dout", &dout},
                        {"dlogits", &dlogits},
                        {"da", &da},
                        {"db", &db}});
  c.run([&] { do_fusion_bwd(logits, a, b, dout, dlogits, da, db); });
}

void Backend::fusion_add_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                             const Tensor& residual, const Tensor& out) {
  OpChecks c(*this, Op::fusion_add_fwd);
  check_elementwise(c, {{"logits", &logits}, {"a", &a}, {"b", &b}, {"residual", &residual},
                        {"out", &out}});
  c.run([&] { do_fusion_add_fwd(logits, a, b, residual, out); });
}

// ---- summaries ---------------------------------------------------------------------------

void Backend::summary_fwd(SummaryMode mode, const Tensor& x, int batch, int seq, const Tensor& s) {
  OpChecks c(*this, Op::summary_fwd);
  c.compute("x", x);
  check_batch(c, batch, seq);
  c.shape("x", x, static_cast<std::int64_t>(batch) * seq, x.cols());
  c.like("s", s, summary_rows(mode, batch, seq), x.cols());
  c.run([&] { do_summary_fwd(mode, x, batch, seq, s); });
}

void Backend::summary_bwd(SummaryMode mode, const Tensor& ds, int batch, int seq,
                          const Tensor& dx) {
  OpChecks c(*this, Op::summary_bwd);
  c.compute("dx", dx);
  check_batch(c, batch, seq);
  c.shape("dx", dx, static_cast<std::int64_t>(batch) * seq, dx.cols());
  c.like("ds", ds, summary_rows(mode, batch, seq), dx.cols());
  c.accumulates(dx);
  c.run([&] { do_summary_bwd(mode, ds, batch, seq, dx); });
}

// ---- ATM row maps --------------------------------------------------------------------------

void Backend::row_cosine_next(const Tensor& x, int batch, int seq, const Tensor& rho) {
  OpChecks c(*this, Op::row_cosine_next);
  c.compute("x", x);
  check_batch(c, batch, seq);
  const std::int64_t n = static_cast<std::int64_t>(batch) * seq;
  c.shape("x", x, n, x.cols());
  // Any fp32 or fp64 the backend computes in (the similarity is summed in double).
  c.tensor("rho", rho);
  c.require((rho.dtype() == DType::F32 || rho.dtype() == DType::F64) && computes_in(rho.dtype()),
            "rho is ", dtype_name(rho.dtype()), ", expected fp32",
            computes_in(DType::F64) ? " or fp64" : "");
  c.shape("rho", rho, n, 1);
  c.run([&] { do_row_cosine_next(x, batch, seq, rho); });
}

void Backend::atm_plan(const Tensor& rho, int batch, int seq, double tau, AtmMode mode,
                       SummaryMode summary, const TokenPlanTensors& plan) {
  OpChecks c(*this, Op::atm_plan);
  check_batch(c, batch, seq);
  c.require(mode != AtmMode::Off, "ATM is off: no plan to build");
  c.require(std::isfinite(tau), "tau ", tau, " is not finite");
  const std::int64_t n = static_cast<std::int64_t>(batch) * seq;
  c.tensor("rho", rho);
  c.require((rho.dtype() == DType::F32 || rho.dtype() == DType::F64) && computes_in(rho.dtype()),
            "rho is ", dtype_name(rho.dtype()), ", expected fp32",
            computes_in(DType::F64) ? " or fp64" : "");
  c.shape("rho", rho, n, 1);
  c.index("n_queries", plan.index.n_queries, batch);
  c.index("groups", plan.groups, batch);
  c.index("key_prefix", plan.index.key_prefix, n);
  c.index("key_extra", plan.index.key_extra, n);
  c.index("ctx_row", plan.index.ctx_row, n);
  c.index("pos_q", plan.pos_q, n);
  c.index("pos_kv", plan.pos_kv, n);
  c.index("merge_a", plan.merge_a, n);
  c.index("merge_b", plan.merge_b, n);
  if (mode == AtmMode::Paper) c.index("unmerge", plan.unmerge, n);
  c.run([&] { do_atm_plan(rho, batch, seq, tau, mode, summary, plan); });
}

void Backend::merge_rows_fwd(const Tensor& src, const Tensor& idx_a, const Tensor& idx_b,
                             const Tensor& dst) {
  OpChecks c(*this, Op::merge_rows_fwd);
  c.compute("src", src);
  c.like("dst", dst, dst.rows(), src.cols());
  c.index("idx_a", idx_a, dst.rows());
  c.index("idx_b", idx_b, dst.rows());
  c.run([&] { do_merge_rows_fwd(src, idx_a, idx_b, dst); });
}

void Backend::merge_rows_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                             const Tensor& dsrc) {
  OpChecks c(*this, Op::merge_rows_bwd);
  c.compute("dsrc", dsrc);
  c.like("ddst", ddst, ddst.rows(), dsrc.cols());
  c.index("idx_a", idx_a, ddst.rows());
  c.index("idx_b", idx_b, ddst.rows());
  c.accumulates(dsrc);
  c.run([&] { do_merge_rows_bwd(ddst, idx_a, idx_b, dsrc); });
}

void Backend::causal_merge_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                               const Tensor& groups, int batch, int seq, const Tensor& dsrc) {
  OpChecks c(*this, Op::causal_merge_bwd);
  c.require(batch >= 0 && seq >= 1, "batch ", batch, " x seq ", seq);
  const std::int64_t n = std::int64_t(batch) * seq;
  c.compute("dsrc", dsrc);
  c.require(dsrc.rows() == n, "dsrc is ", dims(dsrc), " but batch x seq is ", n);
  c.like("ddst", ddst, n, dsrc.cols());
  c.index("idx_a", idx_a, n);
  c.index("idx_b", idx_b, n);
  c.index("groups", groups, batch);
  c.run([&] { do_causal_merge_bwd(ddst, idx_a, idx_b, groups, batch, seq, dsrc); });
}

// ---- loss ------------------------------------------------------------------------------------

void Backend::cross_entropy_fwd(const Tensor& logits, const Tensor& targets, const Tensor& loss,
                                const Tensor& lse) {
  OpChecks c(*this, Op::cross_entropy_fwd);
  c.compute("logits", logits);
  const std::int64_t n = logits.rows(), vocab = logits.cols();
  c.require(vocab > 0 || n == 0, "logits ", dims(logits), " has no columns");
  c.index("targets", targets, n);
  c.wide("loss", loss, n, 1);
  c.wide("lse", lse, n, 1);
  c.run([&] { do_cross_entropy_fwd(logits, targets, loss, lse); });
}

void Backend::cross_entropy_bwd(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                double scale, const Tensor& dlogits) {
  OpChecks c(*this, Op::cross_entropy_bwd);
  c.compute("logits", logits);
  const std::int64_t n = logits.rows(), vocab = logits.cols();
  c.index("targets", targets, n);
  c.wide("lse", lse, n, 1);
  c.like("dlogits", dlogits, n, vocab);
  c.run([&] { do_cross_entropy_bwd(logits, targets, lse, scale, dlogits); });
}

namespace {
// The head's inputs: xf [N, d] and embed [V, d] in the compute dtype.
void check_head(OpChecks& c, const Tensor& xf, const Tensor& embed, const Tensor& targets,
                const Tensor& lse) {
  c.compute("xf", xf);
  c.require(embed.cols() == xf.cols(), "xf is ", dims(xf), " but embed is ", dims(embed),
            " (embed must be [V, ", xf.cols(), "])");
  c.require(embed.rows() > 0 || xf.rows() == 0, "embed ", dims(embed), " has no rows");
  c.like("embed", embed, embed.rows(), xf.cols());
  c.index("targets", targets, xf.rows());
  c.wide("lse", lse, xf.rows(), 1);
}
}  // namespace

void Backend::head_loss_fwd(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                            const Tensor& loss, const Tensor& lse, const HeadLossGrads& grads) {
  OpChecks c(*this, Op::head_loss_fwd);
  check_head(c, xf, embed, targets, lse);
  c.wide("loss", loss, xf.rows(), 1);
  if (grads.dxf.defined() || grads.dembed.defined()) {
    c.like("grads.dxf", grads.dxf, xf.rows(), xf.cols());
    c.wide("grads.dembed", grads.dembed, embed.rows(), embed.cols());
  }
  c.run([&] { do_head_loss_fwd(xf, embed, targets, loss, lse, grads); });
}

void Backend::head_loss_bwd(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                            const Tensor& lse, double scale, const Tensor& dxf,
                            const Tensor& dembed) {
  OpChecks c(*this, Op::head_loss_bwd);
  check_head(c, xf, embed, targets, lse);
  c.like("dxf", dxf, xf.rows(), xf.cols());
  c.wide("dembed", dembed, embed.rows(), embed.cols());
  c.run([&] { do_head_loss_bwd(xf, embed, targets, lse, scale, dxf, dembed); });
}

}  // namespace wiola
