#include "partition/cost_model.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "model/flops.hpp"

namespace wiola {

double embedding_cost_per_token(const ModelConfig& c, const CostModel& m) {
  // Per element of the d-wide row, in fp32: forward reads the table row and
  // writes the output (8 B); backward reads the output gradient and does a
  // read-modify-write of the table's gradient row (12 B). 20 B x d in all.
  return 20.0 * c.d * m.flops_per_byte;
}

double loss_cost_per_token(const ModelConfig& c, const CostModel& m) {
  // Final norm: about five fp32 passes over d (forward read/write, backward
  // reads of input and gradient, write of the input gradient): 20 B x d.
  // Softmax cross-entropy over V fp32 logits: max and sum-of-exp passes in the
  // forward, a read and a write of the logit gradient in the backward: 16 B x V.
  return (20.0 * c.d + 16.0 * c.V) * m.flops_per_byte;
}

double activation_elements_per_token_per_layer(const ModelConfig& c) {
  // A rough count of what one layer of our implementation keeps per token
  // until its backward pass (recomputation off):
  const double d = c.d, hd = double(c.H) * c.head_dim(), kvd = double(c.Hkv) * c.head_dim();
  if (!c.main_family()) {
    // Wiola 13M (model/layer13m.hpp's Layer13mSaved).
    const double H = c.H, dh = c.head_dim(), dff = c.dff;
    double n = 0;
    n += 2 * d;              // layer input, normed input
    n += 2 * hd;             // Q before and after spiral RoPE
    n += 2 * kvd;            // K after RoPE, V
    n += 2 * dh + 4 * H;     // gate: head mean m, prefix mean c, W1 out, SiLU, logits, σ
    n += 2 * hd;             // gated queries, attention output (input of o_proj)
    n += H;                  // log-sum-exp
    n += 2 * d;              // h' (ffn_norm input) and its normalisation
    n += 3 * dff;            // [a; b] and r (input of down)
    return n;
  }
  const double lam = c.Lambda;
  double n = 0;
  n += 2 * d;                    // attn_norm: layer input X, normed X~ (input of q/k/v/gate)
  n += lam * d;                  // context summaries C (input of ctx_k / ctx_v)
  n += 2 * hd;                   // Q after SRPE, gate pre-activation
  n += 2 * kvd;                  // K after SRPE, V
  n += 2 * lam * kvd;            // context keys and values Kc, Vc
  n += 2 * hd;                   // O_self and O_ctx (for the beta mix)
  n += hd;                       // G * O, the input of o_proj
  n += double(c.H) * (1 + lam);  // softmax statistics: log-sum-exp, context weights
  n += 2 * d;                    // X_half (ffn_norm input) and X^ (input of a_gate, a_up, b_up)
  n += 3.0 * c.dA;               // G_A x, U_A x, SiLU(G_A x) * U_A x (input of a_down)
  n += 2.0 * c.dB;               // U_B x, GELU(U_B x) (input of b_down)
  n += 3 * d;                    // a and b (input of fuse), the mix alpha
  return n;
}

namespace {

// Head activations on the last stage: final-norm input and output, and the
// fp32 logits the loss needs (held for one micro-batch only: the last stage
// runs each backward right after its forward).
double head_activation_elements_per_token(const ModelConfig& c) { return 2.0 * c.d + c.V; }

}  // namespace

StageCost stage_cost(const ModelConfig& c, const StageSpec& s, int stage, int pp,
                     const CostModel& m) {
  require(pp >= 1 && stage >= 0 && stage < pp, "stage ", stage, " is out of range for ", pp,
          " stages");
  require(0 <= s.first_layer && s.first_layer <= s.end_layer && s.end_layer <= c.L, "stage ", stage,
          ": layers [", s.first_layer, ", ", s.end_layer, ") do not fit ", c.L, " layers");
  StageCost r;
  double fwd = 0;
  for (int l = s.first_layer; l < s.end_layer; ++l) fwd += layer_forward_flops_per_token(c, l);
  r.train_flops_per_token = 3.0 * fwd;
  if (s.embed) r.train_flops_per_token += embedding_cost_per_token(c, m);
  if (s.head)
    r.train_flops_per_token += 3.0 * head_forward_flops_per_token(c) + loss_cost_per_token(c, m);

  // Same count as ParamLayout(c, s).total(), without building the names.
  r.params = std::int64_t(s.num_layers()) * layer_param_count(c);
  if (s.embed || s.head) r.params += std::int64_t(c.V) * c.d;
  if (s.head) r.params += 2 * std::int64_t(c.d);
  r.param_bytes = double(r.params) * m.bytes_per_param;

  double elems = s.num_layers() * activation_elements_per_token_per_layer(c);
  if (s.head) elems += head_activation_elements_per_token(c);
  r.activation_bytes_per_token = elems * m.bytes_per_activation;
  r.in_flight = m.microbatches > 0 ? (m.hold_all_microbatches ? m.microbatches
                                                              : std::min(pp - stage, m.microbatches))
                                    : pp - stage;
  const double tokens = m.microbatch_tokens > 0 ? double(m.microbatch_tokens) : double(c.T);
  r.activation_bytes = r.activation_bytes_per_token * tokens * r.in_flight;
  return r;
}

}  // namespace wiola
