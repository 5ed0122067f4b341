#pragma once
// Element-by-element ops on 2-D strided views of one floating dtype (fp32 or
// bf16; arithmetic in fp32): sums, scaling, the gates and activations of the
// Wiola layer (σ-gate, SiLU product, exact GELU, DSFF fusion), forward and
// backward side by side. Outputs may alias inputs element for element.
#include "backend/cuda/runtime.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda::kernels {

void add(const Tensor& a, const Tensor& b, const Tensor& out, Stream s);  // out = a + b
void axpy(double alpha, const Tensor& x, const Tensor& y, Stream s);      // y += alpha·x
void scale(const Tensor& x, double alpha, Stream s);                      // x *= alpha

void sigmoid_mul_fwd(const Tensor& g, const Tensor& x, const Tensor& y, Stream s);
void sigmoid_mul_bwd(const Tensor& g, const Tensor& x, const Tensor& dy, const Tensor& dg,
                     const Tensor& dx, Stream s);
void silu_mul_fwd(const Tensor& g, const Tensor& u, const Tensor& y, Stream s);
void silu_mul_bwd(const Tensor& g, const Tensor& u, const Tensor& dy, const Tensor& dg,
                  const Tensor& du, Stream s);
void gelu_fwd(const Tensor& x, const Tensor& y, Stream s);
void gelu_bwd(const Tensor& x, const Tensor& dy, const Tensor& dx, Stream s);
// The DSFF's two activations over the same rows in one launch where their
// views allow (else one each): ha = SiLU(ga) ⊙ ua, hb = GELU(ub), and back.
void dsff_act_fwd(const Tensor& ga, const Tensor& ua, const Tensor& ub, const Tensor& ha,
                  const Tensor& hb, Stream s);
void dsff_act_bwd(const Tensor& ga, const Tensor& ua, const Tensor& dha, const Tensor& ub,
                  const Tensor& dhb, const Tensor& dga, const Tensor& dua, const Tensor& dub,
                  Stream s);
void fusion_fwd(const Tensor& logits, const Tensor& a, const Tensor& b, const Tensor& out,
                Stream s);
// out = residual + fusion (the fusion rounded to the dtype first)
void fusion_add_fwd(const Tensor& logits, const Tensor& a, const Tensor& b,
                    const Tensor& residual, const Tensor& out, Stream s);
void fusion_bwd(const Tensor& logits, const Tensor& a, const Tensor& b, const Tensor& dout,
                const Tensor& dlogits, const Tensor& da, const Tensor& db, Stream s);

}  // namespace wiola::cuda::kernels
