#pragma once
// The CPU backend: the exact reference implementation of every Backend op in
// fp32 and fp64 (bf16 is GPU-only). The Backend front has checked shapes and
// dtypes; each op dispatches to the kernels in src/ops by dtype, after
// checking the index values it will follow. OpenMP parallelises the loops;
// results are bit-identical for any thread count.
#include <atomic>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "backend/backend.hpp"

namespace wiola {

class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device::CPU; }
  std::string name() const override { return "cpu"; }
  bool computes_in(DType dtype) const override {
    return dtype == DType::F32 || dtype == DType::F64;
  }
  MemoryStats memory() const override;
  std::size_t memory_capacity() const override;

 protected:
  Tensor do_alloc(DType dtype, std::int64_t rows, std::int64_t cols) override;
  Tensor do_alloc_uninit(DType dtype, std::int64_t rows, std::int64_t cols) override;
  void do_fill(const Tensor& t, double value) override;
  void do_copy(const Tensor& src, const Tensor& dst) override;
  void do_convert(const Tensor& src, const Tensor& dst) override;
  void do_to_host(const Tensor& src, void* dst) override;
  void do_from_host(const void* src, const Tensor& dst) override;
  void do_copy_to_host(const void* src, void* host_dst, std::size_t bytes) override {
    std::memcpy(host_dst, src, bytes);
  }
  void do_copy_from_host(const void* host_src, void* dst, std::size_t bytes) override {
    std::memcpy(dst, host_src, bytes);
  }

  void do_add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void do_axpy(double alpha, const Tensor& x, const Tensor& y) override;
  void do_scale(const Tensor& x, double alpha) override;
  void do_sum(const Tensor& x, const Tensor& acc) override;
  void do_sum_squares(const Tensor& x, const Tensor& acc) override;

  void do_linear_fwd(const Tensor& x, const Tensor& w, const Tensor& y, bool accumulate) override;
  void do_linear_bwd_data(const Tensor& dy, const Tensor& w, const Tensor& dx,
                          bool accumulate) override;
  void do_linear_bwd_weight(const Tensor& dy, const Tensor& x, const Tensor& dw) override;

  void do_embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out) override;
  void do_embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable) override;

  void do_wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta, double eps,
                       const Tensor& y, const Tensor& rstd) override;
  void do_wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                       const Tensor& rstd, const Tensor& dy, const Tensor& dx, bool accumulate,
                       const Tensor& dgamma, const Tensor& ddelta) override;

  void do_srpe_fwd(const Tensor& x, const Tensor& positions, const Tensor& cos_tab,
                   const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                   const Tensor& y) override;
  void do_srpe_bwd(const Tensor& dy, const Tensor& positions, const Tensor& cos_tab,
                   const Tensor& sin_tab, int head_dim, RotaryPairs pairs,
                   const Tensor& dx) override;

  void do_head_mean_fwd(const Tensor& x, int head_dim, const Tensor& y) override;
  void do_head_mean_bwd(const Tensor& dy, int head_dim, const Tensor& dx, bool accumulate) override;
  void do_head_scale_fwd(const Tensor& x, const Tensor& s, int head_dim, const Tensor& y) override;
  void do_head_scale_bwd(const Tensor& x, const Tensor& s, const Tensor& dy, int head_dim,
                         const Tensor& dx, const Tensor& ds) override;

  void do_attention_fwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                        const Tensor& v, std::span<const Tensor> ctx_k,
                        std::span<const Tensor> ctx_v, const Tensor& phi,
                        const AttentionIndex& index, const Tensor& o, const Tensor& o_self,
                        const Tensor& o_ctx, const Tensor& lse_self,
                        const Tensor& lse_ctx) override;
  void do_attention_bwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                        const Tensor& v, std::span<const Tensor> ctx_k,
                        std::span<const Tensor> ctx_v, const Tensor& phi,
                        const AttentionIndex& index, const Tensor& o_self, const Tensor& o_ctx,
                        const Tensor& lse_self, const Tensor& lse_ctx, const Tensor& d_o,
                        const Tensor& dq, const Tensor& dk, const Tensor& dv,
                        std::span<const Tensor> dctx_k, std::span<const Tensor> dctx_v,
                        const Tensor& dphi) override;

  void do_sigmoid_mul_fwd(const Tensor& g, const Tensor& x, const Tensor& y) override;
  void do_sigmoid_mul_bwd(const Tensor& g, const Tensor& x, const Tensor& dy, const Tensor& dg,
                          const Tensor& dx) override;
  void do_silu_mul_fwd(const Tensor& g, const Tensor& u, const Tensor& y) override;
  void do_silu_mul_bwd(const Tensor& g, const Tensor& u, const Tensor& dy, const Tensor& dg,
                       const Tensor& du) override;
  void do_gelu_fwd(const Tensor& x, const Tensor& y) override;
  void do_gelu_bwd(const Tensor& x, const Tensor& dy, const Tensor& dx) override;
  void do_fusion_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                     const Tensor& out) override;
  void do_fusion_bwd(const Tensor& logits, const Tensor& a, const Tensor& b, const Tensor& dout,
                     const Tensor& dlogits, const Tensor& da, const Tensor& db) override;

  void do_summary_fwd(SummaryMode mode, const Tensor& x, int batch, int seq,
                      const Tensor& s) override;
  void do_summary_bwd(SummaryMode mode, const Tensor& ds, int batch, int seq,
                      const Tensor& dx) override;

  void do_row_cosine_next(const Tensor& x, int batch, int seq, const Tensor& rho) override;
  void do_atm_plan(const Tensor& rho, int batch, int seq, double tau, AtmMode mode,
                   SummaryMode summary, const TokenPlanTensors& plan) override;
  void do_merge_rows_fwd(const Tensor& src, const Tensor& idx_a, const Tensor& idx_b,
                         const Tensor& dst) override;
  void do_merge_rows_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                         const Tensor& dsrc) override;

  void do_cross_entropy_fwd(const Tensor& logits, const Tensor& targets, const Tensor& loss,
                            const Tensor& lse) override;
  void do_cross_entropy_bwd(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                            double scale, const Tensor& dlogits) override;

  void do_adamw_step(const AdamW& h, const Tensor& param, const Tensor& grad, const Tensor& m,
                     const Tensor& v) override;

 private:
  // Aligned storage for a rows x cols tensor, its bytes as they come.
  Tensor allocate(DType dtype, std::int64_t rows, std::int64_t cols, const char* op);
  // Bytes held by tensors; shared with their deleters, which may outlive the backend.
  struct Counters {
    std::atomic<std::size_t> in_use{0}, peak{0};
  };
  std::shared_ptr<Counters> counters_ = std::make_shared<Counters>();
};

}  // namespace wiola
