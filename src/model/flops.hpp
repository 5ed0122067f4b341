#pragma once
// The one FLOP formula of the project (docs/models.md, "FLOPs"). Every log
// line, benchmark, partition cost and MFU figure uses these functions.
//
// Counted: matrix products at 2 FLOPs per multiply-add, for the dense model
// (ATM's savings are not subtracted: these are "model FLOPs"). Causal
// self-attention counts only the keys a query can see, (T+1)/2 on average.
// Training = forward + backward = 3 x forward.
#include "core/model_config.hpp"

namespace wiola {

// Forward FLOPs per token of one decoder layer (context of `n_ctx` summaries).
double context_layer_forward_flops(const ModelConfig& c, int n_ctx);
// Forward FLOPs per token of layer `layer` (its context has min(layer+1, Lambda) summaries).
double layer_forward_flops_per_token(const ModelConfig& c, int layer);
// Forward FLOPs per token of the tied output head (final norm ignored).
double head_forward_flops_per_token(const ModelConfig& c);
// Forward FLOPs per token of layers [first, end) plus the head when `head`.
double forward_flops_per_token(const ModelConfig& c, int first_layer, int end_layer, bool head);
// Training FLOPs per token of the whole model (3 x forward).
double training_flops_per_token(const ModelConfig& c);

}  // namespace wiola
