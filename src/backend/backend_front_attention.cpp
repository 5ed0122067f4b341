// The front of the GCLA attention core, forward and backward: the shapes and
// dtypes of both model families' arguments, checked once for every backend.
// The index values are the backends' business (the CPU checks each one it
// follows; the CUDA kernels clamp them and never read outside a tensor).
#include <cstdint>
#include <string>

#include "backend/backend.hpp"
#include "backend/op_checks.hpp"

namespace wiola {

namespace {

std::string nth(const char* name, std::size_t c) {
  return std::string(name) + "[" + std::to_string(c) + "]";
}

// The inputs forward and backward share.
void check_inputs(OpChecks& c, const AttentionDims& d, const Tensor& q, const Tensor& k,
                  const Tensor& v, std::span<const Tensor> ctx_k, std::span<const Tensor> ctx_v,
                  const Tensor& phi, const AttentionIndex& index) {
  c.require(d.batch >= 0 && d.seq > 0 && d.heads > 0 && d.kv_heads > 0 && d.head_dim > 0,
            "bad dims batch=", d.batch, " seq=", d.seq, " heads=", d.heads,
            " kv_heads=", d.kv_heads, " head_dim=", d.head_dim);
  const std::int64_t n = static_cast<std::int64_t>(d.batch) * d.seq;
  const std::int64_t qw = static_cast<std::int64_t>(d.heads) * d.head_dim;
  const std::int64_t kw = static_cast<std::int64_t>(d.kv_heads) * d.head_dim;
  c.compute("q", q);
  c.shape("q", q, n, qw);
  c.like("k", k, n, kw);
  c.like("v", v, n, kw);
  c.require(ctx_v.size() == ctx_k.size(), ctx_k.size(), " ctx_k tensors but ", ctx_v.size(),
            " ctx_v tensors");
  for (std::size_t i = 0; i < ctx_k.size(); ++i) {
    c.like(nth("ctx_k", i), ctx_k[i], ctx_k[i].rows(), kw);
    c.like(nth("ctx_v", i), ctx_v[i], ctx_k[i].rows(), kw);
    c.require(d.batch == 0 || ctx_k[i].rows() > 0, nth("ctx_k", i), " has no rows");
  }
  if (!ctx_k.empty()) c.like("phi", phi, 1, 1);  // no context: β is not used
  c.index("n_queries", index.n_queries, d.batch);
  c.index("key_prefix", index.key_prefix, n);
  c.index("key_extra", index.key_extra, n);
  c.index("ctx_row", index.ctx_row, n);
}

// SRPE's operands (AttentionRotary), those forward and backward share: its
// tables count only the rows the positions select.
void check_rotary(OpChecks& c, const AttentionDims& d, const AttentionRotary& r) {
  const std::int64_t n = static_cast<std::int64_t>(d.batch) * d.seq;
  c.require(d.head_dim % 2 == 0, "rotary: head_dim ", d.head_dim, " must be even");
  c.index("rotary.pos_q", r.pos_q, n);
  c.index("rotary.pos_kv", r.pos_kv, n);
  c.wide("rotary.cos_tab", r.cos_tab, r.cos_tab.rows(), d.head_dim / 2);
  c.wide("rotary.sin_tab", r.sin_tab, r.cos_tab.rows(), d.head_dim / 2);
  c.touches_rows(r.cos_tab, n);
  c.touches_rows(r.sin_tab, n);
}

}  // namespace

void Backend::attention_fwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                            const Tensor& v, std::span<const Tensor> ctx_k,
                            std::span<const Tensor> ctx_v, const Tensor& phi,
                            const AttentionIndex& index, const Tensor& o, const Tensor& o_self,
                            const Tensor& o_ctx, const Tensor& lse_self, const Tensor& lse_ctx,
                            const AttentionGate& gate, const AttentionRotary& rotary) {
  OpChecks c(*this, Op::attention_fwd);
  check_inputs(c, dims, q, k, v, ctx_k, ctx_v, phi, index);
  const std::int64_t n = q.rows();
  const bool ctx = !ctx_k.empty();
  c.like("o", o, n, q.cols());
  c.like("o_self", o_self, n, q.cols());
  if (ctx) c.like("o_ctx", o_ctx, n, q.cols());
  c.wide("lse_self", lse_self, n, dims.heads);
  if (ctx) c.wide("lse_ctx", lse_ctx, n, dims.heads);
  const bool gated = gate.glog.defined() || gate.y.defined();
  if (gated) {
    c.like("gate.glog", gate.glog, n, q.cols());
    c.like("gate.y", gate.y, n, q.cols());
  }
  const bool rotated = rotary.defined();
  if (rotated) {
    check_rotary(c, dims, rotary);
    c.like("q rotated in place", q, n, q.cols());  // written as well as read
  }
  c.run([&] {
    if (gated || rotated)
      do_attention_fwd_fused(dims, q, k, v, ctx_k, ctx_v, phi, index, o, o_self, o_ctx, lse_self,
                             lse_ctx, gate, rotary);
    else
      do_attention_fwd(dims, q, k, v, ctx_k, ctx_v, phi, index, o, o_self, o_ctx, lse_self,
                       lse_ctx);
  });
}

void Backend::attention_bwd(const AttentionDims& dims, const Tensor& q, const Tensor& k,
                            const Tensor& v, std::span<const Tensor> ctx_k,
                            std::span<const Tensor> ctx_v, const Tensor& phi,
                            const AttentionIndex& index, const Tensor& o_self, const Tensor& o_ctx,
                            const Tensor& lse_self, const Tensor& lse_ctx, const Tensor& d_o,
                            const Tensor& dq, const Tensor& dk, const Tensor& dv,
                            std::span<const Tensor> dctx_k, std::span<const Tensor> dctx_v,
                            const Tensor& dphi, const AttentionGateGrad& gate,
                            const AttentionRotary& rotary) {
  OpChecks c(*this, Op::attention_bwd);
  check_inputs(c, dims, q, k, v, ctx_k, ctx_v, phi, index);
  const std::int64_t n = q.rows();
  const bool ctx = !ctx_k.empty();
  c.like("o_self", o_self, n, q.cols());
  if (ctx) c.like("o_ctx", o_ctx, n, q.cols());
  c.wide("lse_self", lse_self, n, dims.heads);
  if (ctx) c.wide("lse_ctx", lse_ctx, n, dims.heads);
  c.like("d_o", d_o, n, q.cols());
  c.like("dq", dq, n, q.cols());
  c.like("dk", dk, n, k.cols());
  c.like("dv", dv, n, v.cols());
  c.require(dctx_k.size() == ctx_k.size() && dctx_v.size() == ctx_k.size(), ctx_k.size(),
            " context summaries but ", dctx_k.size(), " dctx_k and ", dctx_v.size(),
            " dctx_v tensors");
  for (std::size_t i = 0; i < ctx_k.size(); ++i) {
    c.like(nth("dctx_k", i), dctx_k[i], ctx_k[i].rows(), ctx_k[i].cols());
    c.like(nth("dctx_v", i), dctx_v[i], ctx_v[i].rows(), ctx_v[i].cols());
  }
  if (ctx) c.wide("dphi", dphi, 1, 1);
  const bool gated =
      gate.glog.defined() || gate.o.defined() || gate.dy.defined() || gate.dglog.defined();
  if (gated) {
    c.like("gate.glog", gate.glog, n, q.cols());
    c.like("gate.o", gate.o, n, q.cols());
    c.like("gate.dy", gate.dy, n, q.cols());
    c.like("gate.dglog", gate.dglog, n, q.cols());
  }
  const bool rotated = rotary.defined();
  if (rotated) check_rotary(c, dims, rotary);  // dq and dk are still written once
  c.run([&] {
    if (gated || rotated)
      do_attention_bwd_fused(dims, q, k, v, ctx_k, ctx_v, phi, index, o_self, o_ctx, lse_self,
                             lse_ctx, d_o, dq, dk, dv, dctx_k, dctx_v, dphi, gate, rotary);
    else
      do_attention_bwd(dims, q, k, v, ctx_k, ctx_v, phi, index, o_self, o_ctx, lse_self, lse_ctx,
                       d_o, dq, dk, dv, dctx_k, dctx_v, dphi);
  });
}

}  // namespace wiola
