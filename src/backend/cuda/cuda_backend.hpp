#pragma once
// The CUDA backend: every Backend op on one device, in bf16 (or fp32) with
// fp32 statistics, fp32 parameter gradients and fp32 accumulation in every
// product (cuBLASLt). Work is queued on the backend's own stream; memory is
// stream-ordered (cudaMallocAsync), so a tensor released while kernels still
// use it is reused only by work queued after them. Host reads (to_host)
// synchronise the stream; nothing else does.
#include <memory>
#include <span>
#include <string>

#include "backend/backend.hpp"
#include "backend/cuda/blas.hpp"
#include "backend/cuda/runtime.hpp"

namespace wiola::cuda {

class CudaBackend final : public Backend {
 public:
  // Selects `device` for this process and creates the stream and cuBLASLt handle.
  explicit CudaBackend(int device);
  ~CudaBackend() override;

  Device device() const override { return Device::CUDA; }
  std::string name() const override;
  bool computes_in(DType dtype) const override {
    return dtype == DType::BF16 || dtype == DType::F32;
  }
  void synchronize() override;
  bool records_graphs() const override { return true; }
  std::unique_ptr<DeviceGraph> capture(const std::function<void()>& work) override;
  Stream stream() const { return stream_; }
  // The cudaStream_t; nullptr in the emulation (tests/cuda_emu), whose streams
  // no CUDA library can use.
  void* native_stream() const override;
  MemoryStats memory() const override;
  std::optional<DeviceCounts> device_counts() const override;
  std::size_t memory_capacity() const override;
  void reserve_memory(std::size_t bytes) override;
  // The head's loss keeps no logits (cuda_backend_loss.cpp).
  bool head_loss_keeps_no_logits() const override { return true; }
  bool joins_products() const override { return true; }
  void set_head_loss_block_bytes(std::size_t bytes) override { head_block_bytes_ = bytes; }

 protected:
  Tensor do_alloc(DType dtype, std::int64_t rows, std::int64_t cols) override;
  // Without the zero-fill (a memset of the whole tensor): for outputs an op
  // writes whole. All bits set under WIOLA_POISON_UNINIT=1, as on the CPU.
  Tensor do_alloc_uninit(DType dtype, std::int64_t rows, std::int64_t cols) override;
  void note_operand_bytes(Op op, std::int64_t bytes) override;
  void do_fill(const Tensor& t, double value) override;
  void do_copy(const Tensor& src, const Tensor& dst) override;
  void do_convert(const Tensor& src, const Tensor& dst) override;
  void do_to_host(const Tensor& src, void* dst) override;
  void do_from_host(const void* src, const Tensor& dst) override;
  void do_copy_to_host(const void* src, void* host_dst, std::size_t bytes) override;
  void do_copy_from_host(const void* host_src, void* dst, std::size_t bytes) override;

  void do_add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void do_axpy(double alpha, const Tensor& x, const Tensor& y) override;
  void do_scale(const Tensor& x, double alpha) override;
  void do_sum(const Tensor& x, const Tensor& acc) override;
  void do_sum_squares(const Tensor& x, const Tensor& acc) override;

  void do_linear_fwd(const Tensor& x, const Tensor& w, const Tensor& y, bool accumulate) override;
  void do_linear_bwd_data(const Tensor& dy, const Tensor& w, const Tensor& dx,
                          bool accumulate) override;
  void do_linear_bwd_weight(const Tensor& dy, const Tensor& x, const Tensor& dw) override;
  // One product over the whole stacked weight.
  void do_linear_fwd_stacked(const Tensor& x, const Tensor& w,
                             std::span<const std::int64_t> part_rows, const Tensor& y) override;
  void do_linear_bwd_data_stacked(const Tensor& dy, const Tensor& w,
                                  std::span<const std::int64_t> part_rows, const Tensor& dx,
                                  bool accumulate) override;

  void do_embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out) override;
  void do_embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable) override;

  void do_wrmsnorm_fwd(const Tensor& x, const Tensor& gamma, const Tensor& delta, double eps,
                       const Tensor& y, const Tensor& rstd) override;
  void do_wrmsnorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& delta,
                       const Tensor& rstd, const Tensor& dy, const Tensor& dx, bool accumulate,
                       const Tensor& dgamma, const Tensor& ddelta) override;
  void do_add_wrmsnorm_fwd(const Tensor& x, const Tensor& r, const Tensor& gamma,
                           const Tensor& delta, double eps, const Tensor& sum, const Tensor& y,
                           const Tensor& rstd) override;

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
  bool attention_takes_srpe() const override { return true; }
  // The gate in the forward kernel's epilogue and in the backward's first
  // pass; SRPE in the forward's Q and K loads and the backward's dQ and dK
  // epilogues.
  void do_attention_fwd_fused(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                              const Tensor& v, std::span<const Tensor> ctx_k,
                              std::span<const Tensor> ctx_v, const Tensor& phi,
                              const AttentionIndex& index, const Tensor& o, const Tensor& o_self,
                              const Tensor& o_ctx, const Tensor& lse_self, const Tensor& lse_ctx,
                              const AttentionGate& gate,
                              const AttentionRotary& rotary) override;
  void do_attention_bwd_fused(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                              const Tensor& v, std::span<const Tensor> ctx_k,
                              std::span<const Tensor> ctx_v, const Tensor& phi,
                              const AttentionIndex& index, const Tensor& o_self,
                              const Tensor& o_ctx, const Tensor& lse_self, const Tensor& lse_ctx,
                              const Tensor& d_o, const Tensor& dq, const Tensor& dk,
                              const Tensor& dv, std::span<const Tensor> dctx_k,
                              std::span<const Tensor> dctx_v, const Tensor& dphi,
                              const AttentionGateGrad& gate,
                              const AttentionRotary& rotary) override;

  void do_sigmoid_mul_fwd(const Tensor& g, const Tensor& x, const Tensor& y) override;
  void do_sigmoid_mul_bwd(const Tensor& g, const Tensor& x, const Tensor& dy, const Tensor& dg,
                          const Tensor& dx) override;
  void do_silu_mul_fwd(const Tensor& g, const Tensor& u, const Tensor& y) override;
  void do_silu_mul_bwd(const Tensor& g, const Tensor& u, const Tensor& dy, const Tensor& dg,
                       const Tensor& du) override;
  void do_gelu_fwd(const Tensor& x, const Tensor& y) override;
  void do_gelu_bwd(const Tensor& x, const Tensor& dy, const Tensor& dx) override;
  void do_dsff_act_fwd(const Tensor& ga, const Tensor& ua, const Tensor& ub, const Tensor& ha,
                       const Tensor& hb) override;
  void do_dsff_act_bwd(const Tensor& ga, const Tensor& ua, const Tensor& dha, const Tensor& ub,
                       const Tensor& dhb, const Tensor& dga, const Tensor& dua,
                       const Tensor& dub) override;
  void do_fusion_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                     const Tensor& out) override;
  void do_fusion_bwd(const Tensor& logits, const Tensor& a, const Tensor& b, const Tensor& dout,
                     const Tensor& dlogits, const Tensor& da, const Tensor& db) override;
  void do_fusion_add_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                         const Tensor& residual, const Tensor& out) override;

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
  void do_causal_merge_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                           const Tensor& groups, int batch, int seq,
                           const Tensor& dsrc) override;

  void do_cross_entropy_fwd(const Tensor& logits, const Tensor& targets, const Tensor& loss,
                            const Tensor& lse) override;
  void do_cross_entropy_bwd(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                            double scale, const Tensor& dlogits) override;
  // z = xf·embedᵀ in fp32, a block of rows at a time; the gradients (in the
  // forward when it is given their outputs, else in the backward, which
  // makes the block's z again): dz in the compute dtype and two products.
  void do_head_loss_fwd(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                        const Tensor& loss, const Tensor& lse,
                        const HeadLossGrads& grads) override;
  void do_head_loss_bwd(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                        const Tensor& lse, double scale, const Tensor& dxf,
                        const Tensor& dembed) override;

  void do_adamw_step(const AdamW& h, const Tensor& param, const Tensor& grad, const Tensor& m,
                     const Tensor& v) override;

 private:
  struct Memory;
  class CapturedGraph;
  // Stream-ordered memory for a tensor (its size rounded up to kAlignment),
  // returned to the pool when the last view of it goes.
  Tensor allocate_tensor(DType dtype, std::int64_t rows, std::int64_t cols, const char* kind);
  // Rows per block of the head's loss: within head_block_bytes_, all blocks
  // of one size (the last may be shorter by less than their number).
  std::int64_t head_block_rows(std::int64_t n, std::int64_t vocab, DType dtype) const;
  // Per block: the logits; the loss (given `loss`); the gradients (given `grads`).
  void head_loss_blocks(const Tensor& xf, const Tensor& embed, const Tensor& targets,
                        const Tensor& lse, const Tensor* loss, const HeadLossGrads* grads);
  int device_;
  Stream stream_ = nullptr;
  std::shared_ptr<Memory> memory_;  // shared with every allocation's deleter
  std::unique_ptr<Blas> blas_;
  std::size_t head_block_bytes_ = kHeadLossBlockBytes;
};

// Makes the CUDA backend selectable (backend_registry.hpp): called by the
// tools' main() in builds with CUDA.
void register_backend();

}  // namespace wiola::cuda
