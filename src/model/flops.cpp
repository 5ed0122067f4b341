#include "model/flops.hpp"

#include <algorithm>

namespace wiola {

double context_layer_forward_flops(const ModelConfig& c, int n_ctx) {
  const double d = c.d, hd = double(c.H) * c.head_dim(), kvd = double(c.Hkv) * c.head_dim();
  const double T = c.T;
  double f = 0;
  f += 2 * d * hd * 2;             // q_proj, gate_proj
  f += 2 * d * kvd * 2;            // k_proj, v_proj
  f += 2 * hd * d;                 // o_proj
  if (c.summary == SummaryMode::Causal)
    f += 2 * d * kvd * 2 * n_ctx;  // ctx_k, ctx_v of every per-position summary
  f += 2 * 2 * hd * (T + 1) / 2;   // causal scores and weighted sum
  f += 2 * 2 * hd * n_ctx;         // context sub-attention
  f += 2 * d * c.dA * 3;           // a_gate, a_up, a_down
  f += 2 * d * c.dB * 2;           // b_up, b_down
  f += 2 * (2 * d) * d;            // fuse
  return f;
}

namespace {

// Wiola 13M: no context, no DSFF; the gate's MLP is per token too.
double layer13m_forward_flops(const ModelConfig& c) {
  const double d = c.d, hd = double(c.H) * c.head_dim(), kvd = double(c.Hkv) * c.head_dim();
  const double T = c.T, H = c.H, dh = c.head_dim(), dff = c.dff;
  double f = 0;
  f += 2 * d * hd;                  // q_proj
  f += 2 * d * kvd * 2;             // k_proj, v_proj
  f += 2 * hd * d;                  // o_proj
  f += 2 * dh * H + 2 * H * H;      // gate_w1, gate_w2
  f += 2 * 2 * hd * (T + 1) / 2;    // causal scores and weighted sum
  f += 2 * d * dff * 2;             // up ([a; b])
  f += 2 * d * dff;                 // bypass
  f += 2 * dff * d;                 // down
  return f;
}

}  // namespace

double layer_forward_flops_per_token(const ModelConfig& c, int layer) {
  if (!c.main_family()) return layer13m_forward_flops(c);
  return context_layer_forward_flops(c, std::min(layer + 1, c.Lambda));
}

double head_forward_flops_per_token(const ModelConfig& c) { return 2.0 * c.d * c.V; }

double forward_flops_per_token(const ModelConfig& c, int first_layer, int end_layer, bool head) {
  double f = 0;
  for (int l = first_layer; l < end_layer; ++l) f += layer_forward_flops_per_token(c, l);
  if (head) f += head_forward_flops_per_token(c);
  return f;
}

double training_flops_per_token(const ModelConfig& c) {
  return 3.0 * forward_flops_per_token(c, 0, c.L, true);
}

}  // namespace wiola
