// CpuBackend: the layer ops (linear, embedding, norm, SRPE, activations,
// summaries, ATM row maps, loss, optimizer). Each checks its arguments and
// dispatches to the src/ops kernel of the tensors' dtype.
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/cpu_checks.hpp"
#include "ops/activations.hpp"
#include "ops/adamw.hpp"
#include "ops/cross_entropy.hpp"
#include "ops/embedding.hpp"
#include "ops/gemm.hpp"
#include "ops/row_maps.hpp"
#include "ops/srpe.hpp"
#include "ops/summary.hpp"
#include "ops/wrmsnorm.hpp"

namespace wiola {

using namespace cpu;

namespace {

// Every entry of an I32 [n, 1] index tensor lies in [lo, hi).
void check_range(std::string_view op, std::string_view name, const Tensor& idx,
                 std::int64_t lo, std::int64_t hi) {
  const std::int32_t* p = idx.ptr<std::int32_t>();
  for (std::int64_t i = 0; i < idx.rows(); ++i) {
    const std::int64_t v = p[i * idx.ld()];
    require(v >= lo && v < hi, op, ": ", name, "[", i, "] = ", v, " is outside [", lo, ", ", hi,
            ")");
  }
}

// Elementwise ops: every tensor is [n, c] like the first one, same dtype.
DType check_elementwise(std::string_view op, std::initializer_list<std::pair<const char*, const Tensor*>> ts) {
  const auto& first = *ts.begin();
  const DType dt = float_dtype(op, first.first, *first.second);
  for (const auto& [name, t] : ts)
    check_float(op, name, *t, dt, first.second->rows(), first.second->cols());
  return dt;
}

}  // namespace

// ---- linear -----------------------------------------------------------------

void CpuBackend::linear_fwd(const Tensor& x, const Tensor& w, const Tensor& y, bool accumulate) {
  const char* op = "linear_fwd";
  const DType dt = float_dtype(op, "x", x);
  check_dtype(op, "w", w, dt);
  require(w.cols() == x.cols(), op, ": x is ", dims(x), " but w is ", dims(w), " (w must be [out, ",
          x.cols(), "])");
  check_float(op, "y", y, dt, x.rows(), w.rows());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::linear_fwd(x.rows(), x.cols(), w.rows(), x.ptr<T>(), x.ld(), w.ptr<T>(), w.ld(),
                    y.ptr<T>(), y.ld(), accumulate);
  });
}

void CpuBackend::linear_bwd_data(const Tensor& dy, const Tensor& w, const Tensor& dx,
                                 bool accumulate) {
  const char* op = "linear_bwd_data";
  const DType dt = float_dtype(op, "dy", dy);
  check_dtype(op, "w", w, dt);
  require(w.rows() == dy.cols(), op, ": dy is ", dims(dy), " but w is ", dims(w),
          " (w must be [", dy.cols(), ", in])");
  check_float(op, "dx", dx, dt, dy.rows(), w.cols());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::linear_bwd_data(dy.rows(), w.cols(), w.rows(), dy.ptr<T>(), dy.ld(), w.ptr<T>(), w.ld(),
                         dx.ptr<T>(), dx.ld(), accumulate);
  });
}

void CpuBackend::linear_bwd_weight(const Tensor& dy, const Tensor& x, const Tensor& dw) {
  const char* op = "linear_bwd_weight";
  const DType dt = float_dtype(op, "dy", dy);
  check_dtype(op, "x", x, dt);
  require(x.rows() == dy.rows(), op, ": dy is ", dims(dy), " but x is ", dims(x),
          " (both need the same rows)");
  check_float(op, "dw", dw, dt, dy.cols(), x.cols());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::linear_bwd_weight(dy.rows(), x.cols(), dy.cols(), dy.ptr<T>(), dy.ld(), x.ptr<T>(),
                           x.ld(), dw.ptr<T>(), dw.ld());
  });
}

// ---- embedding ----------------------------------------------------------------

void CpuBackend::embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out) {
  const char* op = "embedding_fwd";
  const DType dt = float_dtype(op, "table", table);
  check_index(op, "tokens", tokens, tokens.rows());
  check_float(op, "out", out, dt, tokens.rows(), table.cols());
  check_range(op, "tokens", tokens, 0, table.rows());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::embedding_fwd(tokens.rows(), table.cols(), tokens.ptr<std::int32_t>(), tokens.ld(),
                       table.ptr<T>(), table.ld(), out.ptr<T>(), out.ld());
  });
}

void CpuBackend::embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable) {
  const char* op = "embedding_bwd";
  const DType dt = float_dtype(op, "dtable", dtable);
  check_index(op, "tokens", tokens, tokens.rows());
  check_float(op, "dout", dout, dt, tokens.rows(), dtable.cols());
  check_range(op, "tokens", tokens, 0, dtable.rows());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::embedding_bwd(tokens.rows(), dtable.cols(), dtable.rows(), tokens.ptr<std::int32_t>(),
                       tokens.ld(), dout.ptr<T>(), dout.ld(), dtable.ptr<T>(), dtable.ld());
  });
}

// ---- WRMSNorm -------------------------------------------------------------------

void CpuBackend::wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                              double eps, const Tensor& y, const Tensor& rstd) {
  const char* op = "wrmsnorm_fwd";
  const DType dt = float_dtype(op, "x", x);
  const std::int64_t n = x.rows(), d = x.cols();
  require(eps >= 0.0, op, ": eps ", eps, " is negative");
  check_float(op, "gamma", gamma, dt, 1, d);
  if (delta.defined()) check_float(op, "delta", delta, dt, 1, d);
  check_float(op, "y", y, dt, n, d);
  check_float(op, "rstd", rstd, dt, n, 1);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    // No δ (plain RMSNorm): a zero shift, which adds exactly nothing.
    const std::vector<T> no_shift(delta.defined() ? 0 : static_cast<std::size_t>(d), T(0));
    const T* shift = delta.defined() ? delta.ptr<T>() : no_shift.data();
    ops::wrmsnorm_fwd(n, d, x.ptr<T>(), x.ld(), gamma.ptr<T>(), shift, eps, y.ptr<T>(), y.ld(),
                      rstd.ptr<T>(), rstd.ld());
  });
}

void CpuBackend::wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                              const Tensor& rstd, const Tensor& dy, const Tensor& dx,
                              bool accumulate, const Tensor& dgamma, const Tensor& ddelta) {
  const char* op = "wrmsnorm_bwd";
  const DType dt = float_dtype(op, "x", x);
  const std::int64_t n = x.rows(), d = x.cols();
  check_float(op, "gamma", gamma, dt, 1, d);
  require(delta.defined() == ddelta.defined(), op, ": delta and ddelta must both be given or ",
          "both be undefined (plain RMSNorm)");
  if (delta.defined()) check_float(op, "delta", delta, dt, 1, d);
  check_float(op, "rstd", rstd, dt, n, 1);
  check_float(op, "dy", dy, dt, n, d);
  check_float(op, "dx", dx, dt, n, d);
  check_float(op, "dgamma", dgamma, dt, 1, d);
  if (ddelta.defined()) check_float(op, "ddelta", ddelta, dt, 1, d);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    // No δ: a zero shift, and its gradient goes to a scratch row nobody reads.
    std::vector<T> scratch(delta.defined() ? 0 : 2 * static_cast<std::size_t>(d), T(0));
    const T* shift = delta.defined() ? delta.ptr<T>() : scratch.data();
    T* dshift = delta.defined() ? ddelta.ptr<T>() : scratch.data() + d;
    ops::wrmsnorm_bwd(n, d, x.ptr<T>(), x.ld(), gamma.ptr<T>(), shift, rstd.ptr<T>(), rstd.ld(),
                      dy.ptr<T>(), dy.ld(), dx.ptr<T>(), dx.ld(), accumulate, dgamma.ptr<T>(),
                      dshift);
  });
}

// ---- SRPE -------------------------------------------------------------------------

namespace {

// Shared checks of srpe_fwd/bwd; returns the dtype.
DType check_srpe(std::string_view op, std::string_view in_name, const Tensor& in,
                 const Tensor& positions, const Tensor& cos_tab, const Tensor& sin_tab,
                 int head_dim, std::string_view out_name, const Tensor& out) {
  const DType dt = float_dtype(op, in_name, in);
  require(head_dim > 0 && head_dim % 2 == 0, op, ": head_dim ", head_dim,
          " must be positive and even");
  require(in.cols() % head_dim == 0, op, ": ", in_name, " is ", dims(in),
          ", whose width is not a multiple of head_dim ", head_dim);
  check_float(op, out_name, out, dt, in.rows(), in.cols());
  check_index(op, "positions", positions, in.rows());
  check_dtype(op, "cos_tab", cos_tab, dt);
  require(cos_tab.cols() == head_dim / 2, op, ": cos_tab is ", dims(cos_tab), ", expected [P, ",
          head_dim / 2, "]");
  check_float(op, "sin_tab", sin_tab, dt, cos_tab.rows(), cos_tab.cols());
  check_range(op, "positions", positions, 0, cos_tab.rows());
  return dt;
}

}  // namespace

void CpuBackend::srpe_fwd(const Tensor& x, const Tensor& positions, const Tensor& cos_tab,
                          const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                          const Tensor& y) {
  const DType dt = check_srpe("srpe_fwd", "x", x, positions, cos_tab, sin_tab, head_dim, "y", y);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::srpe_fwd<T>(x.rows(), x.cols() / head_dim, head_dim, x.ptr<T>(), x.ld(),
                     positions.ptr<std::int32_t>(), positions.ld(), cos_tab.ptr<T>(),
                     cos_tab.ld(), sin_tab.ptr<T>(), sin_tab.ld(), y.ptr<T>(), y.ld(),
                     pairs == RotaryPairs::Interleaved);
  });
}

void CpuBackend::srpe_bwd(const Tensor& dy, const Tensor& positions, const Tensor& cos_tab,
                          const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                          const Tensor& dx) {
  const DType dt =
      check_srpe("srpe_bwd", "dy", dy, positions, cos_tab, sin_tab, head_dim, "dx", dx);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::srpe_bwd<T>(dy.rows(), dy.cols() / head_dim, head_dim, dy.ptr<T>(), dy.ld(),
                     positions.ptr<std::int32_t>(), positions.ld(), cos_tab.ptr<T>(),
                     cos_tab.ld(), sin_tab.ptr<T>(), sin_tab.ld(), dx.ptr<T>(), dx.ld(),
                     pairs == RotaryPairs::Interleaved);
  });
}

// ---- gates and activations -----------------------------------------------------------

void CpuBackend::sigmoid_mul_fwd(const Tensor& g, const Tensor& x, const Tensor& y) {
  const DType dt = check_elementwise("sigmoid_mul_fwd", {{"g", &g}, {"x", &x}, {"y", &y}});
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::sigmoid_mul_fwd(g.rows(), g.cols(), g.ptr<T>(), g.ld(), x.ptr<T>(), x.ld(), y.ptr<T>(),
                         y.ld());
  });
}

void CpuBackend::sigmoid_mul_bwd(const Tensor& g, const Tensor& x, const Tensor& dy,
                                 const Tensor& dg, const Tensor& dx) {
  const DType dt = check_elementwise(
      "sigmoid_mul_bwd", {{"g", &g}, {"x", &x}, {"dy", &dy}, {"dg", &dg}, {"dx", &dx}});
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::sigmoid_mul_bwd(g.rows(), g.cols(), g.ptr<T>(), g.ld(), x.ptr<T>(), x.ld(), dy.ptr<T>(),
                         dy.ld(), dg.ptr<T>(), dg.ld(), dx.ptr<T>(), dx.ld());
  });
}

void CpuBackend::silu_mul_fwd(const Tensor& g, const Tensor& u, const Tensor& y) {
  const DType dt = check_elementwise("silu_mul_fwd", {{"g", &g}, {"u", &u}, {"y", &y}});
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::silu_mul_fwd(g.rows(), g.cols(), g.ptr<T>(), g.ld(), u.ptr<T>(), u.ld(), y.ptr<T>(),
                      y.ld());
  });
}

void CpuBackend::silu_mul_bwd(const Tensor& g, const Tensor& u, const Tensor& dy,
                              const Tensor& dg, const Tensor& du) {
  const DType dt = check_elementwise(
      "silu_mul_bwd", {{"g", &g}, {"u", &u}, {"dy", &dy}, {"dg", &dg}, {"du", &du}});
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::silu_mul_bwd(g.rows(), g.cols(), g.ptr<T>(), g.ld(), u.ptr<T>(), u.ld(), dy.ptr<T>(),
                      dy.ld(), dg.ptr<T>(), dg.ld(), du.ptr<T>(), du.ld());
  });
}

void CpuBackend::gelu_fwd(const Tensor& x, const Tensor& y) {
  const DType dt = check_elementwise("gelu_fwd", {{"x", &x}, {"y", &y}});
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::gelu_fwd(x.rows(), x.cols(), x.ptr<T>(), x.ld(), y.ptr<T>(), y.ld());
  });
}

void CpuBackend::gelu_bwd(const Tensor& x, const Tensor& dy, const Tensor& dx) {
  const DType dt = check_elementwise("gelu_bwd", {{"x", &x}, {"dy", &dy}, {"dx", &dx}});
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::gelu_bwd(x.rows(), x.cols(), x.ptr<T>(), x.ld(), dy.ptr<T>(), dy.ld(), dx.ptr<T>(),
                  dx.ld());
  });
}

void CpuBackend::fusion_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                            const Tensor& out) {
  const DType dt =
      check_elementwise("fusion_fwd", {{"logits", &logits}, {"a", &a}, {"b", &b}, {"out", &out}});
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::fusion_fwd(logits.rows(), logits.cols(), logits.ptr<T>(), logits.ld(), a.ptr<T>(),
                    a.ld(), b.ptr<T>(), b.ld(), out.ptr<T>(), out.ld());
  });
}

void CpuBackend::fusion_bwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                            const Tensor& dout, const Tensor& dlogits, const Tensor& da,
                            const Tensor& db) {
  const DType dt = check_elementwise("fusion_bwd", {{"logits", &logits},
                                                    {"a", &a},
                                                    {"b", &b},
                                                    {"dout", &dout},
                                                    {"dlogits", &dlogits},
                                                    {"da", &da},
                                                    {"db", &db}});
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::fusion_bwd(logits.rows(), logits.cols(), logits.ptr<T>(), logits.ld(), a.ptr<T>(),
                    a.ld(), b.ptr<T>(), b.ld(), dout.ptr<T>(), dout.ld(), dlogits.ptr<T>(),
                    dlogits.ld(), da.ptr<T>(), da.ld(), db.ptr<T>(), db.ld());
  });
}

// ---- summaries ----------------------------------------------------------------------

namespace {

std::int64_t summary_rows(SummaryMode mode, int batch, int seq) {
  return mode == SummaryMode::Causal ? static_cast<std::int64_t>(batch) * seq : batch;
}

}  // namespace

void CpuBackend::summary_fwd(SummaryMode mode, const Tensor& x, int batch, int seq,
                             const Tensor& s) {
  const char* op = "summary_fwd";
  const DType dt = float_dtype(op, "x", x);
  require(batch >= 0 && seq > 0, op, ": batch ", batch, " and seq ", seq, " must be >= 0 and > 0");
  check_shape(op, "x", x, static_cast<std::int64_t>(batch) * seq, x.cols());
  check_float(op, "s", s, dt, summary_rows(mode, batch, seq), x.cols());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    if (mode == SummaryMode::Causal)
      ops::summary_causal_fwd(batch, seq, x.cols(), x.ptr<T>(), x.ld(), s.ptr<T>(), s.ld());
    else
      ops::summary_sequence_fwd(batch, seq, x.cols(), x.ptr<T>(), x.ld(), s.ptr<T>(), s.ld());
  });
}

void CpuBackend::summary_bwd(SummaryMode mode, const Tensor& ds, int batch, int seq,
                             const Tensor& dx) {
  const char* op = "summary_bwd";
  const DType dt = float_dtype(op, "dx", dx);
  require(batch >= 0 && seq > 0, op, ": batch ", batch, " and seq ", seq, " must be >= 0 and > 0");
  check_shape(op, "dx", dx, static_cast<std::int64_t>(batch) * seq, dx.cols());
  check_float(op, "ds", ds, dt, summary_rows(mode, batch, seq), dx.cols());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    if (mode == SummaryMode::Causal)
      ops::summary_causal_bwd(batch, seq, dx.cols(), ds.ptr<T>(), ds.ld(), dx.ptr<T>(), dx.ld());
    else
      ops::summary_sequence_bwd(batch, seq, dx.cols(), ds.ptr<T>(), ds.ld(), dx.ptr<T>(),
                                dx.ld());
  });
}

// ---- ATM row maps ---------------------------------------------------------------------

void CpuBackend::row_cosine_next(const Tensor& x, int batch, int seq, const Tensor& rho) {
  const char* op = "row_cosine_next";
  const DType dt = float_dtype(op, "x", x);
  const DType rt = float_dtype(op, "rho", rho);
  require(batch >= 0 && seq > 0, op, ": batch ", batch, " and seq ", seq, " must be >= 0 and > 0");
  const std::int64_t n = static_cast<std::int64_t>(batch) * seq;
  check_shape(op, "x", x, n, x.cols());
  check_shape(op, "rho", rho, n, 1);
  dispatch(dt, [&](auto xzero) {
    using T = decltype(xzero);
    dispatch(rt, [&](auto rzero) {
      using R = decltype(rzero);
      ops::row_cosine_next(batch, seq, x.cols(), x.ptr<T>(), x.ld(), rho.ptr<R>(), rho.ld());
    });
  });
}

namespace {

// idx_a, idx_b in [−1, src_rows); idx_a = −1 must come with idx_b = −1.
void check_merge_map(std::string_view op, const Tensor& idx_a, const Tensor& idx_b,
                     std::int64_t rows, std::int64_t src_rows) {
  check_index(op, "idx_a", idx_a, rows);
  check_index(op, "idx_b", idx_b, rows);
  check_range(op, "idx_a", idx_a, -1, src_rows);
  check_range(op, "idx_b", idx_b, -1, src_rows);
  for (std::int64_t r = 0; r < rows; ++r)
    require(index_at(idx_a, r) >= 0 || index_at(idx_b, r) < 0, op, ": row ", r,
            " has idx_a = -1 but idx_b = ", index_at(idx_b, r),
            " (a row with no first index must have none at all)");
}

}  // namespace

void CpuBackend::merge_rows_fwd(const Tensor& src, const Tensor& idx_a, const Tensor& idx_b,
                                const Tensor& dst) {
  const char* op = "merge_rows_fwd";
  const DType dt = float_dtype(op, "src", src);
  check_float(op, "dst", dst, dt, dst.rows(), src.cols());
  check_merge_map(op, idx_a, idx_b, dst.rows(), src.rows());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::merge_rows_fwd(dst.rows(), src.cols(), src.ptr<T>(), src.ld(),
                        idx_a.ptr<std::int32_t>(), idx_a.ld(), idx_b.ptr<std::int32_t>(),
                        idx_b.ld(), dst.ptr<T>(), dst.ld());
  });
}

void CpuBackend::merge_rows_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                                const Tensor& dsrc) {
  const char* op = "merge_rows_bwd";
  const DType dt = float_dtype(op, "dsrc", dsrc);
  check_float(op, "ddst", ddst, dt, ddst.rows(), dsrc.cols());
  check_merge_map(op, idx_a, idx_b, ddst.rows(), dsrc.rows());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::merge_rows_bwd(ddst.rows(), dsrc.cols(), dsrc.rows(), ddst.ptr<T>(), ddst.ld(),
                        idx_a.ptr<std::int32_t>(), idx_a.ld(), idx_b.ptr<std::int32_t>(),
                        idx_b.ld(), dsrc.ptr<T>(), dsrc.ld());
  });
}

// ---- loss -------------------------------------------------------------------------------

void CpuBackend::cross_entropy_fwd(const Tensor& logits, const Tensor& targets,
                                   const Tensor& loss, const Tensor& lse) {
  const char* op = "cross_entropy_fwd";
  const DType dt = float_dtype(op, "logits", logits);
  const std::int64_t n = logits.rows(), vocab = logits.cols();
  require(vocab > 0 || n == 0, op, ": logits ", dims(logits), " has no columns");
  check_index(op, "targets", targets, n);
  check_range(op, "targets", targets, -1, vocab);
  check_float(op, "loss", loss, dt, n, 1);
  check_float(op, "lse", lse, dt, n, 1);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::cross_entropy_fwd(n, vocab, logits.ptr<T>(), logits.ld(), targets.ptr<std::int32_t>(),
                           targets.ld(), loss.ptr<T>(), loss.ld(), lse.ptr<T>(), lse.ld());
  });
}

void CpuBackend::cross_entropy_bwd(const Tensor& logits, const Tensor& targets,
                                   const Tensor& lse, double scale, const Tensor& dlogits) {
  const char* op = "cross_entropy_bwd";
  const DType dt = float_dtype(op, "logits", logits);
  const std::int64_t n = logits.rows(), vocab = logits.cols();
  check_index(op, "targets", targets, n);
  check_range(op, "targets", targets, -1, vocab);
  check_float(op, "lse", lse, dt, n, 1);
  check_float(op, "dlogits", dlogits, dt, n, vocab);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::cross_entropy_bwd(n, vocab, logits.ptr<T>(), logits.ld(), targets.ptr<std::int32_t>(),
                           targets.ld(), lse.ptr<T>(), lse.ld(), static_cast<T>(scale),
                           dlogits.ptr<T>(), dlogits.ld());
  });
}

// ---- optimizer ------------------------------------------------------------------------------

void CpuBackend::adamw_step(const AdamW& h, const Tensor& param, const Tensor& grad,
                            const Tensor& m, const Tensor& v) {
  const DType dt = check_elementwise(
      "adamw_step", {{"param", &param}, {"grad", &grad}, {"m", &m}, {"v", &v}});
  require(h.step >= 1, "adamw_step: step ", h.step, " must be >= 1 (it is 1-based)");
  const ops::AdamWStep s{h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.grad_scale, h.step};
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::adamw_step(s, param.rows(), param.cols(), param.ptr<T>(), param.ld(), grad.ptr<T>(),
                    grad.ld(), m.ptr<T>(), m.ld(), v.ptr<T>(), v.ld());
  });
}

}  // namespace wiola
