// CpuBackend: the layer ops (linear, embedding, norm, SRPE, activations,
// summaries, ATM row maps, loss, optimizer). Each checks the index values it
// will follow and dispatches to the src/ops kernel of the tensors' dtype.
#include <algorithm>
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
#include "ops/token_plan.hpp"
#include "ops/wrmsnorm.hpp"

namespace wiola {

using namespace cpu;

namespace {}  // namespace

// ---- linear -----------------------------------------------------------------

void CpuBackend::do_linear_fwd(const Tensor& x, const Tensor& w, const Tensor& y, bool accumulate) {
  const DType dt = x.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::linear_fwd(x.rows(), x.cols(), w.rows(), x.ptr<T>(), x.ld(), w.ptr<T>(), w.ld(),
                    y.ptr<T>(), y.ld(), accumulate);
  });
}

void CpuBackend::do_linear_bwd_data(const Tensor& dy, const Tensor& w, const Tensor& dx,
                                    bool accumulate) {
  const DType dt = dy.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::linear_bwd_data(dy.rows(), w.cols(), w.rows(), dy.ptr<T>(), dy.ld(), w.ptr<T>(), w.ld(),
                         dx.ptr<T>(), dx.ld(), accumulate);
  });
}

void CpuBackend::do_linear_bwd_weight(const Tensor& dy, const Tensor& x, const Tensor& dw) {
  const DType dt = dy.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::linear_bwd_weight(dy.rows(), x.cols(), dy.cols(), dy.ptr<T>(), dy.ld(), x.ptr<T>(), x.ld(),
                           dw.ptr<T>(), dw.ld());
  });
}

// ---- embedding ----------------------------------------------------------------

void CpuBackend::do_embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out) {
  const char* op = "embedding_fwd";
  const DType dt = table.dtype();
  check_range(op, "tokens", tokens, 0, table.rows());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::embedding_fwd(tokens.rows(), table.cols(), tokens.ptr<std::int32_t>(), tokens.ld(),
                       table.ptr<T>(), table.ld(), out.ptr<T>(), out.ld());
  });
}

void CpuBackend::do_embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable) {
  const char* op = "embedding_bwd";
  const DType dt = dtable.dtype();
  check_range(op, "tokens", tokens, 0, dtable.rows());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::embedding_bwd(tokens.rows(), dtable.cols(), dtable.rows(), tokens.ptr<std::int32_t>(),
                       tokens.ld(), dout.ptr<T>(), dout.ld(), dtable.ptr<T>(), dtable.ld());
  });
}

// ---- WRMSNorm -------------------------------------------------------------------

void CpuBackend::do_wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                                 double eps, const Tensor& y, const Tensor& rstd) {
  const DType dt = x.dtype();
  const std::int64_t n = x.rows(), d = x.cols();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    // No δ (plain RMSNorm): a zero shift, which adds exactly nothing.
    const std::vector<T> no_shift(delta.defined() ? 0 : static_cast<std::size_t>(d), T(0));
    const T* shift = delta.defined() ? delta.ptr<T>() : no_shift.data();
    ops::wrmsnorm_fwd(n, d, x.ptr<T>(), x.ld(), gamma.ptr<T>(), shift, eps, y.ptr<T>(), y.ld(),
                      rstd.ptr<T>(), rstd.ld());
  });
}

void CpuBackend::do_wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                                 const Tensor& rstd, const Tensor& dy, const Tensor& dx,
                                 bool accumulate, const Tensor& dgamma, const Tensor& ddelta) {
  const DType dt = x.dtype();
  const std::int64_t n = x.rows(), d = x.cols();
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

void CpuBackend::do_atm_plan(const Tensor& rho, int batch, int seq, double tau, AtmMode mode,
                             SummaryMode summary, const TokenPlanTensors& plan) {
  const std::int64_t n = static_cast<std::int64_t>(batch) * seq;
  std::vector<double> r(static_cast<std::size_t>(n));
  dispatch(rho.dtype(), [&](auto zero) {
    using R = decltype(zero);
    for (std::int64_t i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = rho.ptr<R>()[i * rho.ld()];
  });
  const TokenPlan p = wiola::atm_plan(r, batch, seq, tau, mode, summary);
  const auto put = [](const std::vector<std::int32_t>& v, const Tensor& t) {
    std::copy(v.begin(), v.end(), t.ptr<std::int32_t>());
  };
  put(p.n_queries, plan.index.n_queries);
  put(p.key_prefix, plan.index.key_prefix);
  put(p.key_extra, plan.index.key_extra);
  put(p.ctx_row, plan.index.ctx_row);
  put(p.pos_q, plan.pos_q);
  put(p.pos_kv, plan.pos_kv);
  put(p.merge_a, plan.merge_a);
  put(p.merge_b, plan.merge_b);
  put(p.groups, plan.groups);
  if (mode == AtmMode::Paper) put(p.unmerge, plan.unmerge);
}

namespace {

// The positions a rotary map follows lie inside its tables.
void check_positions(std::string_view op, const Tensor& positions, const Tensor& cos_tab) {
  check_range(op, "positions", positions, 0, cos_tab.rows());
}

}  // namespace

void CpuBackend::do_srpe_fwd(const Tensor& x, const Tensor& positions, const Tensor& cos_tab,
                             const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                             const Tensor& y) {
  check_positions("srpe_fwd", positions, cos_tab);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    ops::srpe_fwd<T>(x.rows(), x.cols() / head_dim, head_dim, x.ptr<T>(), x.ld(),
                     positions.ptr<std::int32_t>(), positions.ld(), cos_tab.ptr<T>(), cos_tab.ld(),
                     sin_tab.ptr<T>(), sin_tab.ld(), y.ptr<T>(), y.ld(),
                     pairs == RotaryPairs::Interleaved);
  });
}

void CpuBackend::do_srpe_bwd(const Tensor& dy, const Tensor& positions, const Tensor& cos_tab,
                             const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                             const Tensor& dx) {
  check_positions("srpe_bwd", positions, cos_tab);
  dispatch(dy.dtype(), [&](auto zero) {
    using T = decltype(zero);
    ops::srpe_bwd<T>(dy.rows(), dy.cols() / head_dim, head_dim, dy.ptr<T>(), dy.ld(),
                     positions.ptr<std::int32_t>(), positions.ld(), cos_tab.ptr<T>(), cos_tab.ld(),
                     sin_tab.ptr<T>(), sin_tab.ld(), dx.ptr<T>(), dx.ld(),
                     pairs == RotaryPairs::Interleaved);
  });
}

// ---- gates and activations -----------------------------------------------------------

void CpuBackend::do_sigmoid_mul_fwd(const Tensor& g, const Tensor& x, const Tensor& y) {
  const DType dt = g.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::sigmoid_mul_fwd(g.rows(), g.cols(), g.ptr<T>(), g.ld(), x.ptr<T>(), x.ld(), y.ptr<T>(),
                         y.ld());
  });
}

void CpuBackend::do_sigmoid_mul_bwd(const Tensor& g, const Tensor& x, const Tensor& dy,
                                    const Tensor& dg, const Tensor& dx) {
  const DType dt = g.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::sigmoid_mul_bwd(g.rows(), g.cols(), g.ptr<T>(), g.ld(), x.ptr<T>(), x.ld(), dy.ptr<T>(),
                         dy.ld(), dg.ptr<T>(), dg.ld(), dx.ptr<T>(), dx.ld());
  });
}

void CpuBackend::do_silu_mul_fwd(const Tensor& g, const Tensor& u, const Tensor& y) {
  const DType dt = g.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::silu_mul_fwd(g.rows(), g.cols(), g.ptr<T>(), g.ld(), u.ptr<T>(), u.ld(), y.ptr<T>(),
                      y.ld());
  });
}

void CpuBackend::do_silu_mul_bwd(const Tensor& g, const Tensor& u, const Tensor& dy,
                                 const Tensor& dg, const Tensor& du) {
  const DType dt = g.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::silu_mul_bwd(g.rows(), g.cols(), g.ptr<T>(), g.ld(), u.ptr<T>(), u.ld(), dy.ptr<T>(),
                      dy.ld(), dg.ptr<T>(), dg.ld(), du.ptr<T>(), du.ld());
  });
}

void CpuBackend::do_gelu_fwd(const Tensor& x, const Tensor& y) {
  const DType dt = x.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::gelu_fwd(x.rows(), x.cols(), x.ptr<T>(), x.ld(), y.ptr<T>(), y.ld());
  });
}

void CpuBackend::do_gelu_bwd(const Tensor& x, const Tensor& dy, const Tensor& dx) {
  const DType dt = x.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::gelu_bwd(x.rows(), x.cols(), x.ptr<T>(), x.ld(), dy.ptr<T>(), dy.ld(), dx.ptr<T>(),
                  dx.ld());
  });
}

void CpuBackend::do_fusion_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                               const Tensor& out) {
  const DType dt = logits.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::fusion_fwd(logits.rows(), logits.cols(), logits.ptr<T>(), logits.ld(), a.ptr<T>(), a.ld(),
                    b.ptr<T>(), b.ld(), out.ptr<T>(), out.ld());
  });
}

void CpuBackend::do_fusion_bwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                               const Tensor& dout, const Tensor& dlogits, const Tensor& da,
                               const Tensor& db) {
  const DType dt = logits.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::fusion_bwd(logits.rows(), logits.cols(), logits.ptr<T>(), logits.ld(), a.ptr<T>(), a.ld(),
                    b.ptr<T>(), b.ld(), dout.ptr<T>(), dout.ld(), dlogits.ptr<T>(), dlogits.ld(),
                    da.ptr<T>(), da.ld(), db.ptr<T>(), db.ld());
  });
}

// ---- summaries ----------------------------------------------------------------------

void CpuBackend::do_summary_fwd(SummaryMode mode, const Tensor& x, int batch, int seq,
                                const Tensor& s) {
  const DType dt = x.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    if (mode == SummaryMode::Causal)
      ops::summary_causal_fwd(batch, seq, x.cols(), x.ptr<T>(), x.ld(), s.ptr<T>(), s.ld());
    else
      ops::summary_sequence_fwd(batch, seq, x.cols(), x.ptr<T>(), x.ld(), s.ptr<T>(), s.ld());
  });
}

void CpuBackend::do_summary_bwd(SummaryMode mode, const Tensor& ds, int batch, int seq,
                                const Tensor& dx) {
  const DType dt = dx.dtype();
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    if (mode == SummaryMode::Causal)
      ops::summary_causal_bwd(batch, seq, dx.cols(), ds.ptr<T>(), ds.ld(), dx.ptr<T>(), dx.ld());
    else
      ops::summary_sequence_bwd(batch, seq, dx.cols(), ds.ptr<T>(), ds.ld(), dx.ptr<T>(), dx.ld());
  });
}

// ---- ATM row maps ---------------------------------------------------------------------

void CpuBackend::do_row_cosine_next(const Tensor& x, int batch, int seq, const Tensor& rho) {
  dispatch(x.dtype(), [&](auto xzero) {
    using T = decltype(xzero);
    dispatch(rho.dtype(), [&](auto rzero) {
      using R = decltype(rzero);
      ops::row_cosine_next(batch, seq, x.cols(), x.ptr<T>(), x.ld(), rho.ptr<R>(), rho.ld());
    });
  });
}

namespace {

// idx_a, idx_b in [−1, src_rows); idx_a = −1 must come with idx_b = −1.
void check_merge_map(std::string_view op, const Tensor& idx_a, const Tensor& idx_b,
                     std::int64_t rows, std::int64_t src_rows) {
  check_range(op, "idx_a", idx_a, -1, src_rows);
  check_range(op, "idx_b", idx_b, -1, src_rows);
  for (std::int64_t r = 0; r < rows; ++r)
    require(index_at(idx_a, r) >= 0 || index_at(idx_b, r) < 0, op, ": row ", r,
            " has idx_a = -1 but idx_b = ", index_at(idx_b, r),
            " (a row with no first index must have none at all)");
}

}  // namespace

void CpuBackend::do_merge_rows_fwd(const Tensor& src, const Tensor& idx_a, const Tensor& idx_b,
                                   const Tensor& dst) {
  const char* op = "merge_rows_fwd";
  const DType dt = src.dtype();
  check_merge_map(op, idx_a, idx_b, dst.rows(), src.rows());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::merge_rows_fwd(dst.rows(), src.cols(), src.ptr<T>(), src.ld(), idx_a.ptr<std::int32_t>(),
                        idx_a.ld(), idx_b.ptr<std::int32_t>(), idx_b.ld(), dst.ptr<T>(), dst.ld());
  });
}

void CpuBackend::do_merge_rows_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                                   const Tensor& dsrc) {
  const char* op = "merge_rows_bwd";
  const DType dt = dsrc.dtype();
  check_merge_map(op, idx_a, idx_b, ddst.rows(), dsrc.rows());
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::merge_rows_bwd(ddst.rows(), dsrc.cols(), dsrc.rows(), ddst.ptr<T>(), ddst.ld(),
                        idx_a.ptr<std::int32_t>(), idx_a.ld(), idx_b.ptr<std::int32_t>(),
                        idx_b.ld(), dsrc.ptr<T>(), dsrc.ld());
  });
}

// ---- loss -------------------------------------------------------------------------------

void CpuBackend::do_cross_entropy_fwd(const Tensor& logits, const Tensor& targets,
                                      const Tensor& loss, const Tensor& lse) {
  const char* op = "cross_entropy_fwd";
  const DType dt = logits.dtype();
  const std::int64_t n = logits.rows(), vocab = logits.cols();
  check_range(op, "targets", targets, -1, vocab);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::cross_entropy_fwd(n, vocab, logits.ptr<T>(), logits.ld(), targets.ptr<std::int32_t>(),
                           targets.ld(), loss.ptr<T>(), loss.ld(), lse.ptr<T>(), lse.ld());
  });
}

void CpuBackend::do_cross_entropy_bwd(const Tensor& logits, const Tensor& targets,
                                      const Tensor& lse, double scale, const Tensor& dlogits) {
  const char* op = "cross_entropy_bwd";
  const DType dt = logits.dtype();
  const std::int64_t n = logits.rows(), vocab = logits.cols();
  check_range(op, "targets", targets, -1, vocab);
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::cross_entropy_bwd(n, vocab, logits.ptr<T>(), logits.ld(), targets.ptr<std::int32_t>(),
                           targets.ld(), lse.ptr<T>(), lse.ld(), static_cast<T>(scale),
                           dlogits.ptr<T>(), dlogits.ld());
  });
}

// ---- optimizer ------------------------------------------------------------------------------

void CpuBackend::do_adamw_step(const AdamW& h, const Tensor& param, const Tensor& grad,
                               const Tensor& m, const Tensor& v) {
  const DType dt = param.dtype();
  const ops::AdamWStep s{h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.grad_scale, h.step};
  dispatch(dt, [&](auto zero) {
    using T = decltype(zero);
    ops::adamw_step(s, param.rows(), param.cols(), param.ptr<T>(), param.ld(), grad.ptr<T>(),
                    grad.ld(), m.ptr<T>(), m.ld(), v.ptr<T>(), v.ld());
  });
}

}  // namespace wiola
