// CudaBackend: embedding, WRMSNorm, SRPE, summaries, ATM row maps and the
// cross-entropy loss. Each op checks its arguments (naming the op, the tensor
// and what is wrong) and queues its kernels (kernels/*.cu) on the stream.
//
// Index tensors are I32 [n, 1] and contiguous. Their values are not read back
// to check them (that would synchronise the stream): the model validates them
// on the host, as the Backend contract says, and the kernels never touch
// memory out of bounds for a bad index -- a forward output turns NaN, a
// backward scatter leaves it out.
#include <string_view>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_checks.hpp"
#include "backend/cuda/kernels/cross_entropy.hpp"
#include "backend/cuda/kernels/embedding.hpp"
#include "backend/cuda/kernels/row_maps.hpp"
#include "backend/cuda/kernels/srpe.hpp"
#include "backend/cuda/kernels/summary.hpp"
#include "backend/cuda/kernels/wrmsnorm.hpp"
#include "core/error.hpp"

namespace wiola::cuda {

namespace {

void check_batch(std::string_view op, int batch, int seq) {
  require(batch >= 0 && seq > 0, op, ": batch ", batch, " and seq ", seq,
          " must be >= 0 and > 0");
}

std::int64_t summary_rows(SummaryMode mode, int batch, int seq) {
  return mode == SummaryMode::Causal ? static_cast<std::int64_t>(batch) * seq : batch;
}

}  // namespace

// ---- embedding ------------------------------------------------------------------

void CudaBackend::embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out) {
  const char* op = "embedding_fwd";
  const DType dt = compute_dtype(op, "table", table);
  check_index(op, "tokens", tokens, tokens.rows());
  check_exact(op, "out", out, dt, tokens.rows(), table.cols());
  kernels::embedding_fwd(tokens, table, out, stream_);
}

void CudaBackend::embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable) {
  const char* op = "embedding_bwd";
  const DType dt = compute_dtype(op, "dout", dout);
  check_index(op, "tokens", tokens, tokens.rows());
  check_f32(op, "dtable", dtable, dtable.rows(), dtable.cols());
  check_exact(op, "dout", dout, dt, tokens.rows(), dtable.cols());
  kernels::embedding_bwd(tokens, dout, dtable, stream_);
}

// ---- WRMSNorm ---------------------------------------------------------------------

namespace {

void check_norm_width(std::string_view op, const Tensor& x) {
  require(x.cols() <= kernels::kNormMaxCols, op, ": x is ", dims(x), "; rows wider than ",
          kernels::kNormMaxCols, " columns are not supported by the CUDA kernels");
}

}  // namespace

void CudaBackend::wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                               double eps, const Tensor& y, const Tensor& rstd) {
  const char* op = "wrmsnorm_fwd";
  const DType dt = compute_dtype(op, "x", x);
  const std::int64_t n = x.rows(), d = x.cols();
  require(eps >= 0.0, op, ": eps ", eps, " is negative");
  check_norm_width(op, x);
  check_exact(op, "gamma", gamma, dt, 1, d);
  if (delta.defined()) check_exact(op, "delta", delta, dt, 1, d);  // undefined: plain RMSNorm
  check_exact(op, "y", y, dt, n, d);
  check_f32(op, "rstd", rstd, n, 1);
  kernels::wrmsnorm_fwd(x, gamma, delta, eps, y, rstd, stream_);
}

void CudaBackend::wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                               const Tensor& rstd, const Tensor& dy, const Tensor& dx,
                               bool accumulate, const Tensor& dgamma, const Tensor& ddelta) {
  const char* op = "wrmsnorm_bwd";
  const DType dt = compute_dtype(op, "x", x);
  const std::int64_t n = x.rows(), d = x.cols();
  check_norm_width(op, x);
  check_exact(op, "gamma", gamma, dt, 1, d);
  require(delta.defined() == ddelta.defined(), op, ": delta and ddelta must both be given or ",
          "both be undefined (plain RMSNorm)");
  if (delta.defined()) check_exact(op, "delta", delta, dt, 1, d);
  check_f32(op, "rstd", rstd, n, 1);
  check_exact(op, "dy", dy, dt, n, d);
  check_exact(op, "dx", dx, dt, n, d);
  check_f32(op, "dgamma", dgamma, 1, d);
  if (ddelta.defined()) check_f32(op, "ddelta", ddelta, 1, d);
  if (n == 0 || d == 0) return;
  const Tensor partials = alloc(DType::F32, 1, kernels::wrmsnorm_bwd_scratch(n, d));
  kernels::wrmsnorm_bwd(x, gamma, delta, rstd, dy, dx, accumulate, dgamma, ddelta,
                        static_cast<float*>(partials.data()), stream_);
}

// ---- SRPE -------------------------------------------------------------------------

namespace {

void check_srpe(std::string_view op, std::string_view in_name, const Tensor& in,
                const Tensor& positions, const Tensor& cos_tab, const Tensor& sin_tab,
                int head_dim, std::string_view out_name, const Tensor& out) {
  const DType dt = compute_dtype(op, in_name, in);
  require(head_dim > 0 && head_dim % 2 == 0, op, ": head_dim ", head_dim,
          " must be positive and even");
  require(in.cols() % head_dim == 0, op, ": ", in_name, " is ", dims(in),
          ", whose width is not a multiple of head_dim ", head_dim);
  check_exact(op, out_name, out, dt, in.rows(), in.cols());
  check_index(op, "positions", positions, in.rows());
  check_f32(op, "cos_tab", cos_tab, cos_tab.rows(), head_dim / 2);
  check_f32(op, "sin_tab", sin_tab, cos_tab.rows(), head_dim / 2);
}

}  // namespace

void CudaBackend::srpe_fwd(const Tensor& x, const Tensor& positions, const Tensor& cos_tab,
                           const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                           const Tensor& y) {
  check_srpe("srpe_fwd", "x", x, positions, cos_tab, sin_tab, head_dim, "y", y);
  kernels::srpe_apply(x, positions, cos_tab, sin_tab, head_dim,
                      pairs == RotaryPairs::Interleaved, false, y, stream_);
}

void CudaBackend::srpe_bwd(const Tensor& dy, const Tensor& positions, const Tensor& cos_tab,
                           const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                           const Tensor& dx) {
  check_srpe("srpe_bwd", "dy", dy, positions, cos_tab, sin_tab, head_dim, "dx", dx);
  kernels::srpe_apply(dy, positions, cos_tab, sin_tab, head_dim,
                      pairs == RotaryPairs::Interleaved, true, dx, stream_);
}

// ---- summaries ----------------------------------------------------------------------

void CudaBackend::summary_fwd(SummaryMode mode, const Tensor& x, int batch, int seq,
                              const Tensor& s) {
  const char* op = "summary_fwd";
  const DType dt = compute_dtype(op, "x", x);
  check_batch(op, batch, seq);
  check_shape(op, "x", x, static_cast<std::int64_t>(batch) * seq, x.cols());
  check_exact(op, "s", s, dt, summary_rows(mode, batch, seq), x.cols());
  kernels::summary_fwd(mode, x, batch, seq, s, stream_);
}

void CudaBackend::summary_bwd(SummaryMode mode, const Tensor& ds, int batch, int seq,
                              const Tensor& dx) {
  const char* op = "summary_bwd";
  const DType dt = compute_dtype(op, "dx", dx);
  check_batch(op, batch, seq);
  check_shape(op, "dx", dx, static_cast<std::int64_t>(batch) * seq, dx.cols());
  check_exact(op, "ds", ds, dt, summary_rows(mode, batch, seq), dx.cols());
  kernels::summary_bwd(mode, ds, batch, seq, dx, stream_);
}

// ---- ATM row maps ---------------------------------------------------------------------

void CudaBackend::row_cosine_next(const Tensor& x, int batch, int seq, const Tensor& rho) {
  const char* op = "row_cosine_next";
  compute_dtype(op, "x", x);
  check_batch(op, batch, seq);
  const std::int64_t n = static_cast<std::int64_t>(batch) * seq;
  check_shape(op, "x", x, n, x.cols());
  check_f32(op, "rho", rho, n, 1);
  kernels::row_cosine_next(x, batch, seq, rho, stream_);
}

void CudaBackend::merge_rows_fwd(const Tensor& src, const Tensor& idx_a, const Tensor& idx_b,
                                 const Tensor& dst) {
  const char* op = "merge_rows_fwd";
  const DType dt = compute_dtype(op, "src", src);
  check_exact(op, "dst", dst, dt, dst.rows(), src.cols());
  check_index(op, "idx_a", idx_a, dst.rows());
  check_index(op, "idx_b", idx_b, dst.rows());
  kernels::merge_rows_fwd(src, idx_a, idx_b, dst, stream_);
}

void CudaBackend::merge_rows_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                                 const Tensor& dsrc) {
  const char* op = "merge_rows_bwd";
  const DType dt = compute_dtype(op, "dsrc", dsrc);
  check_exact(op, "ddst", ddst, dt, ddst.rows(), dsrc.cols());
  check_index(op, "idx_a", idx_a, ddst.rows());
  check_index(op, "idx_b", idx_b, ddst.rows());
  kernels::merge_rows_bwd(ddst, idx_a, idx_b, dsrc, stream_);
}

// ---- loss -------------------------------------------------------------------------------

void CudaBackend::cross_entropy_fwd(const Tensor& logits, const Tensor& targets,
                                    const Tensor& loss, const Tensor& lse) {
  const char* op = "cross_entropy_fwd";
  compute_dtype(op, "logits", logits);
  const std::int64_t n = logits.rows(), vocab = logits.cols();
  require(vocab > 0 || n == 0, op, ": logits ", dims(logits), " has no columns");
  check_index(op, "targets", targets, n);
  check_f32(op, "loss", loss, n, 1);
  check_f32(op, "lse", lse, n, 1);
  kernels::cross_entropy_fwd(logits, targets, loss, lse, stream_);
}

void CudaBackend::cross_entropy_bwd(const Tensor& logits, const Tensor& targets,
                                    const Tensor& lse, double scale, const Tensor& dlogits) {
  const char* op = "cross_entropy_bwd";
  const DType dt = compute_dtype(op, "logits", logits);
  const std::int64_t n = logits.rows(), vocab = logits.cols();
  check_index(op, "targets", targets, n);
  check_f32(op, "lse", lse, n, 1);
  check_exact(op, "dlogits", dlogits, dt, n, vocab);
  kernels::cross_entropy_bwd(logits, targets, lse, scale, dlogits, stream_);
}

}  // namespace wiola::cuda
