// CudaBackend: embedding, WRMSNorm, SRPE, summaries and ATM row maps. The
// Backend front has checked every argument; each op queues its kernels
// (kernels/*.cu) on the stream.
//
// Index tensors are I32 [n, 1] and contiguous. Their values are not read back
// to check them (that would synchronise the stream): the model validates them
// on the host, as the Backend contract says, and the kernels never touch
// memory out of bounds for a bad index -- a forward output turns NaN, a
// backward scatter leaves it out.
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/kernels/atm_plan.hpp"
#include "backend/cuda/kernels/embedding.hpp"
#include "backend/cuda/kernels/row_maps.hpp"
#include "backend/cuda/kernels/srpe.hpp"
#include "backend/cuda/kernels/summary.hpp"
#include "backend/cuda/kernels/wrmsnorm.hpp"
#include "core/error.hpp"

namespace wiola::cuda {

// ---- embedding ------------------------------------------------------------------

void CudaBackend::do_embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out) {
  kernels::embedding_fwd(tokens, table, out, stream_);
}

void CudaBackend::do_embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable) {
  kernels::embedding_bwd(tokens, dout, dtable, stream_);
}

// ---- WRMSNorm ---------------------------------------------------------------------

namespace {

// A row is reduced by one thread block.
void check_norm_width(const char* op, const Tensor& x) {
  require(x.cols() <= kernels::kNormMaxCols, op, ": x is ", x.rows(), "x", x.cols(),
          "; rows wider than ", kernels::kNormMaxCols,
          " columns are not supported by the CUDA kernels");
}

}  // namespace

void CudaBackend::do_wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                                  double eps, const Tensor& y, const Tensor& rstd) {
  check_norm_width("wrmsnorm_fwd", x);
  kernels::wrmsnorm_fwd(x, gamma, delta, eps, y, rstd, stream_);
}

void CudaBackend::do_add_wrmsnorm_fwd(const Tensor& x, const Tensor& r, const Tensor& gamma,
                                      const Tensor& delta, double eps, const Tensor& sum,
                                      const Tensor& y, const Tensor& rstd) {
  check_norm_width("add_wrmsnorm_fwd", x);
  kernels::add_wrmsnorm_fwd(x, r, gamma, delta, eps, sum, y, rstd, stream_);
}

void CudaBackend::do_wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                                  const Tensor& rstd, const Tensor& dy, const Tensor& dx,
                                  bool accumulate, const Tensor& dgamma, const Tensor& ddelta) {
  check_norm_width("wrmsnorm_bwd", x);
  const std::int64_t n = x.rows(), d = x.cols();
  if (n == 0 || d == 0) return;
  // Every chunk writes its partial sums before the second pass reads them.
  const Tensor partials = alloc_uninit(DType::F32, 1, kernels::wrmsnorm_bwd_scratch(n, d));
  kernels::wrmsnorm_bwd(x, gamma, delta, rstd, dy, dx, accumulate, dgamma, ddelta,
                        static_cast<float*>(partials.data()), stream_);
}

// ---- SRPE -------------------------------------------------------------------------

void CudaBackend::do_srpe_fwd(const Tensor& x, const Tensor& positions, const Tensor& cos_tab,
                              const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                              const Tensor& y) {
  kernels::srpe_apply(x, positions, cos_tab, sin_tab, head_dim, pairs == RotaryPairs::Interleaved,
                      false, y, stream_);
}

void CudaBackend::do_srpe_bwd(const Tensor& dy, const Tensor& positions, const Tensor& cos_tab,
                              const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                              const Tensor& dx) {
  kernels::srpe_apply(dy, positions, cos_tab, sin_tab, head_dim, pairs == RotaryPairs::Interleaved,
                      true, dx, stream_);
}

// ---- summaries ----------------------------------------------------------------------

void CudaBackend::do_summary_fwd(SummaryMode mode, const Tensor& x, int batch, int seq,
                                 const Tensor& s) {
  kernels::summary_fwd(mode, x, batch, seq, s, stream_);
}

void CudaBackend::do_summary_bwd(SummaryMode mode, const Tensor& ds, int batch, int seq,
                                 const Tensor& dx) {
  kernels::summary_bwd(mode, ds, batch, seq, dx, stream_);
}

// ---- ATM row maps ---------------------------------------------------------------------

void CudaBackend::do_row_cosine_next(const Tensor& x, int batch, int seq, const Tensor& rho) {
  kernels::row_cosine_next(x, batch, seq, rho, stream_);
}

void CudaBackend::do_atm_plan(const Tensor& rho, int batch, int seq, double tau, AtmMode mode,
                              SummaryMode summary, const TokenPlanTensors& plan) {
  kernels::atm_plan(rho, batch, seq, tau, mode == AtmMode::Paper, summary == SummaryMode::Causal,
                    plan, stream_);
}

void CudaBackend::do_merge_rows_fwd(const Tensor& src, const Tensor& idx_a, const Tensor& idx_b,
                                    const Tensor& dst) {
  kernels::merge_rows_fwd(src, idx_a, idx_b, dst, stream_);
}

void CudaBackend::do_merge_rows_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                                    const Tensor& dsrc) {
  kernels::merge_rows_bwd(ddst, idx_a, idx_b, dsrc, stream_);
}

void CudaBackend::do_causal_merge_bwd(const Tensor& ddst, const Tensor& idx_a,
                                      const Tensor& idx_b, const Tensor& groups, int batch,
                                      int seq, const Tensor& dsrc) {
  kernels::causal_merge_bwd(ddst, idx_a, idx_b, groups, batch, seq, dsrc, stream_);
}

}  // namespace wiola::cuda
