#pragma once
// A Backend that forwards every op to another and, while timing is on, adds
// the wall time of each op to a table by op name (forward and backward
// separately). Each timed op is bracketed by synchronize() on the inner
// backend, so on a device the times are the ops' own (and the run is slower):
// a measured pass for the time split per op family, never a throughput run.
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace wiola {

class TimedBackend final : public Backend {
 public:
  explicit TimedBackend(Backend& inner) : inner_(inner) {}

  void set_timing(bool on) { timing_ = on; }
  void reset() { seconds_.clear(), calls_.clear(); }
  struct Entry {
    std::string op;      // "linear_fwd"
    std::string family;  // "linear"
    double seconds = 0;
    long calls = 0;
  };
  // Every op timed so far, the most expensive first.
  std::vector<Entry> table() const;
  // The family an op belongs to ("attention" for attention_fwd/bwd, ...).
  static std::string family_of(const std::string& op);

  Device device() const override { return inner_.device(); }
  std::string name() const override { return inner_.name(); }
  void synchronize() override { inner_.synchronize(); }
  void* native_stream() const override { return inner_.native_stream(); }
  MemoryStats memory() const override { return inner_.memory(); }
  std::size_t memory_capacity() const override { return inner_.memory_capacity(); }
  void reserve_memory(std::size_t bytes) override { inner_.reserve_memory(bytes); }

  Tensor alloc(DType dtype, std::int64_t rows, std::int64_t cols) override {
    return inner_.alloc(dtype, rows, cols);
  }
  Tensor alloc_uninit(DType dtype, std::int64_t rows, std::int64_t cols) override {
    return inner_.alloc_uninit(dtype, rows, cols);
  }
  void fill(const Tensor& t, double value) override {
    timed("fill", [&] { inner_.fill(t, value); });
  }
  void copy(const Tensor& src, const Tensor& dst) override {
    timed("copy", [&] { inner_.copy(src, dst); });
  }
  void convert(const Tensor& src, const Tensor& dst) override {
    timed("convert", [&] { inner_.convert(src, dst); });
  }
  void to_host(const Tensor& src, void* dst) override {
    timed("to_host", [&] { inner_.to_host(src, dst); });
  }
  void from_host(const void* src, const Tensor& dst) override {
    timed("from_host", [&] { inner_.from_host(src, dst); });
  }
  void copy_to_host(const void* src, void* host_dst, std::size_t bytes) override {
    timed("to_host", [&] { inner_.copy_to_host(src, host_dst, bytes); });
  }
  void copy_from_host(const void* host_src, void* dst, std::size_t bytes) override {
    timed("from_host", [&] { inner_.copy_from_host(host_src, dst, bytes); });
  }

  void add(const Tensor& a, const Tensor& b, const Tensor& out) override {
    timed("add", [&] { inner_.add(a, b, out); });
  }
  void axpy(double alpha, const Tensor& x, const Tensor& y) override {
    timed("axpy", [&] { inner_.axpy(alpha, x, y); });
  }
  void scale(const Tensor& x, double alpha) override {
    timed("scale", [&] { inner_.scale(x, alpha); });
  }
  void sum(const Tensor& x, const Tensor& acc) override {
    timed("sum", [&] { inner_.sum(x, acc); });
  }
  void sum_squares(const Tensor& x, const Tensor& acc) override {
    timed("sum_squares", [&] { inner_.sum_squares(x, acc); });
  }

  void linear_fwd(const Tensor& x, const Tensor& w, const Tensor& y, bool accumulate) override {
    timed("linear_fwd", [&] { inner_.linear_fwd(x, w, y, accumulate); });
  }
  void linear_bwd_data(const Tensor& dy, const Tensor& w, const Tensor& dx,
                       bool accumulate) override {
    timed("linear_bwd_data", [&] { inner_.linear_bwd_data(dy, w, dx, accumulate); });
  }
  void linear_bwd_weight(const Tensor& dy, const Tensor& x, const Tensor& dw) override {
    timed("linear_bwd_weight", [&] { inner_.linear_bwd_weight(dy, x, dw); });
  }

  void embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out) override {
    timed("embedding_fwd", [&] { inner_.embedding_fwd(tokens, table, out); });
  }
  void embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable) override {
    timed("embedding_bwd", [&] { inner_.embedding_bwd(tokens, dout, dtable); });
  }

  void wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta, double eps,
                    const Tensor& y, const Tensor& rstd) override {
    timed("wrmsnorm_fwd", [&] { inner_.wrmsnorm_fwd(x, gamma, delta, eps, y, rstd); });
  }
  void wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta, const Tensor& rstd,
                    const Tensor& dy, const Tensor& dx, bool accumulate, const Tensor& dgamma,
                    const Tensor& ddelta) override {
    timed("wrmsnorm_bwd", [&] {
      inner_.wrmsnorm_bwd(x, gamma, delta, rstd, dy, dx, accumulate, dgamma, ddelta);
    });
  }

  void srpe_fwd(const Tensor& x, const Tensor& positions, const Tensor& cos_tab,
                const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                const Tensor& y) override {
    timed("srpe_fwd",
          [&] { inner_.srpe_fwd(x, positions, cos_tab, sin_tab, head_dim, pairs, y); });
  }
  void srpe_bwd(const Tensor& dy, const Tensor& positions, const Tensor& cos_tab,
                const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                const Tensor& dx) override {
    timed("srpe_bwd",
          [&] { inner_.srpe_bwd(dy, positions, cos_tab, sin_tab, head_dim, pairs, dx); });
  }

  void head_mean_fwd(const Tensor& x, int head_dim, const Tensor& y) override {
    timed("head_mean_fwd", [&] { inner_.head_mean_fwd(x, head_dim, y); });
  }
  void head_mean_bwd(const Tensor& dy, int head_dim, const Tensor& dx, bool accumulate) override {
    timed("head_mean_bwd", [&] { inner_.head_mean_bwd(dy, head_dim, dx, accumulate); });
  }
  void head_scale_fwd(const Tensor& x, const Tensor& s, int head_dim, const Tensor& y) override {
    timed("head_scale_fwd", [&] { inner_.head_scale_fwd(x, s, head_dim, y); });
  }
  void head_scale_bwd(const Tensor& x, const Tensor& s, const Tensor& dy, int head_dim,
                      const Tensor& dx, const Tensor& ds) override {
    timed("head_scale_bwd", [&] { inner_.head_scale_bwd(x, s, dy, head_dim, dx, ds); });
  }

  void attention_fwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                     const Tensor& v, std::span<const Tensor> ctx_k,
                     std::span<const Tensor> ctx_v, const Tensor& phi,
                     const AttentionIndex& index, const Tensor& o, const Tensor& o_self,
                     const Tensor& o_ctx, const Tensor& lse_self, const Tensor& lse_ctx) override {
    timed("attention_fwd", [&] {
      inner_.attention_fwd(dims, q, k, v, ctx_k, ctx_v, phi, index, o, o_self, o_ctx, lse_self,
                           lse_ctx);
    });
  }
  void attention_bwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                     const Tensor& v, std::span<const Tensor> ctx_k,
                     std::span<const Tensor> ctx_v, const Tensor& phi,
                     const AttentionIndex& index, const Tensor& o_self, const Tensor& o_ctx,
                     const Tensor& lse_self, const Tensor& lse_ctx, const Tensor& d_o,
                     const Tensor& dq, const Tensor& dk, const Tensor& dv,
                     std::span<const Tensor> dctx_k, std::span<const Tensor> dctx_v,
                     const Tensor& dphi) override {
    timed("attention_bwd", [&] {
      inner_.attention_bwd(dims, q, k, v, ctx_k, ctx_v, phi, index, o_self, o_ctx, lse_self,
                           lse_ctx, d_o, dq, dk, dv, dctx_k, dctx_v, dphi);
    });
  }

  void sigmoid_mul_fwd(const Tensor& g, const Tensor& x, const Tensor& y) override {
    timed("sigmoid_mul_fwd", [&] { inner_.sigmoid_mul_fwd(g, x, y); });
  }
  void sigmoid_mul_bwd(const Tensor& g, const Tensor& x, const Tensor& dy, const Tensor& dg,
                       const Tensor& dx) override {
    timed("sigmoid_mul_bwd", [&] { inner_.sigmoid_mul_bwd(g, x, dy, dg, dx); });
  }
  void silu_mul_fwd(const Tensor& g, const Tensor& u, const Tensor& y) override {
    timed("silu_mul_fwd", [&] { inner_.silu_mul_fwd(g, u, y); });
  }
  void silu_mul_bwd(const Tensor& g, const Tensor& u, const Tensor& dy, const Tensor& dg,
                    const Tensor& du) override {
    timed("silu_mul_bwd", [&] { inner_.silu_mul_bwd(g, u, dy, dg, du); });
  }
  void gelu_fwd(const Tensor& x, const Tensor& y) override {
    timed("gelu_fwd", [&] { inner_.gelu_fwd(x, y); });
  }
  void gelu_bwd(const Tensor& x, const Tensor& dy, const Tensor& dx) override {
    timed("gelu_bwd", [&] { inner_.gelu_bwd(x, dy, dx); });
  }
  void fusion_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                  const Tensor& out) override {
    timed("fusion_fwd", [&] { inner_.fusion_fwd(logits, a, b, out); });
  }
  void fusion_bwd(const Tensor& logits, const Tensor& a, const Tensor& b, const Tensor& dout,
                  const Tensor& dlogits, const Tensor& da, const Tensor& db) override {
    timed("fusion_bwd", [&] { inner_.fusion_bwd(logits, a, b, dout, dlogits, da, db); });
  }

  void summary_fwd(SummaryMode mode, const Tensor& x, int batch, int seq,
                   const Tensor& s) override {
    timed("summary_fwd", [&] { inner_.summary_fwd(mode, x, batch, seq, s); });
  }
  void summary_bwd(SummaryMode mode, const Tensor& ds, int batch, int seq,
                   const Tensor& dx) override {
    timed("summary_bwd", [&] { inner_.summary_bwd(mode, ds, batch, seq, dx); });
  }

  void row_cosine_next(const Tensor& x, int batch, int seq, const Tensor& rho) override {
    timed("row_cosine_next", [&] { inner_.row_cosine_next(x, batch, seq, rho); });
  }
  void merge_rows_fwd(const Tensor& src, const Tensor& idx_a, const Tensor& idx_b,
                      const Tensor& dst) override {
    timed("merge_rows_fwd", [&] { inner_.merge_rows_fwd(src, idx_a, idx_b, dst); });
  }
  void merge_rows_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                      const Tensor& dsrc) override {
    timed("merge_rows_bwd", [&] { inner_.merge_rows_bwd(ddst, idx_a, idx_b, dsrc); });
  }

  void cross_entropy_fwd(const Tensor& logits, const Tensor& targets, const Tensor& loss,
                         const Tensor& lse) override {
    timed("cross_entropy_fwd", [&] { inner_.cross_entropy_fwd(logits, targets, loss, lse); });
  }
  void cross_entropy_bwd(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                         double scale, const Tensor& dlogits) override {
    timed("cross_entropy_bwd",
          [&] { inner_.cross_entropy_bwd(logits, targets, lse, scale, dlogits); });
  }

  void adamw_step(const AdamW& h, const Tensor& param, const Tensor& grad, const Tensor& m,
                  const Tensor& v) override {
    timed("adamw_step", [&] { inner_.adamw_step(h, param, grad, m, v); });
  }

 private:
  template <class F>
  void timed(const char* op, F&& f) {
    if (!timing_) return f();
    inner_.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    inner_.synchronize();
    seconds_[op] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++calls_[op];
  }

  Backend& inner_;
  bool timing_ = false;
  std::map<std::string, double> seconds_;
  std::map<std::string, long> calls_;
};

}  // namespace wiola
