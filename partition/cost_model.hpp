#pragma once
// The cost model behind the layer-to-stage partition (per token, training =
// forward + backward):
//  * layer l:    3 x layer_forward_flops_per_token (model/flops.hpp, the one formula);
//  * stage 0:    + the embedding, memory-bound: priced in FLOP-equivalents as
//                bytes moved x flops_per_byte (embedding_cost_per_token);
//  * last stage: + 3 x head_forward_flops_per_token, + the final norm and the
//                softmax cross-entropy, memory-bound (loss_cost_per_token).
// Memory per stage: parameters x bytes_per_param (weights, gradients and
// optimizer state), plus the activations a layer keeps for its backward pass
// (activation_elements_per_token_per_layer) times the micro-batches a stage
// holds at once under 1F1B (pp - stage).
#include <cstdint>

#include "core/model_config.hpp"
#include "core/param_layout.hpp"

namespace wiola {

struct CostModel {
  // Machine balance: FLOPs the device can do in the time it moves one byte
  // (H100/H200 bf16 ~ 990 TFLOP/s over ~3.3-4.8 TB/s ~ 200-300; a CPU core
  // ~ 10-50). 100 is a middle value; it only weighs the small memory-bound
  // parts (embedding, norm, loss) against the matrix products.
  double flops_per_byte = 100.0;
  // fp32 weight + fp32 gradient + AdamW m and v (ZeRO would shard the last two).
  double bytes_per_param = 16.0;
  // Stored activation element: 4 (fp32, CPU) or 2 (bf16, GPU).
  double bytes_per_activation = 4.0;
  // Tokens per micro-batch for the activation estimate; 0 means T (one sequence).
  std::int64_t microbatch_tokens = 0;
  // Micro-batches per step: a stage never holds more than these (0: unbounded).
  int microbatches = 0;
  // GPipe: every micro-batch's activations are held until the backwards
  // start (all `microbatches`); 1F1B (false): min(P - s, m) on stage s.
  bool hold_all_microbatches = false;
};

struct StageCost {
  double train_flops_per_token = 0;       // FLOPs plus FLOP-equivalents of memory-bound parts
  std::int64_t params = 0;                // exact (ParamLayout), the head's embed copy included
  double param_bytes = 0;                 // params x bytes_per_param
  double activation_bytes_per_token = 0;  // kept for backward, per token of one micro-batch
  int in_flight = 1;                      // held at once under 1F1B: min(pp - stage, m)
  double activation_bytes = 0;            // per token x microbatch tokens x in_flight
  double memory_bytes() const { return param_bytes + activation_bytes; }
};

// FLOP-equivalents per token of the embedding lookup, forward + backward.
double embedding_cost_per_token(const ModelConfig& c, const CostModel& m = {});
// FLOP-equivalents per token of the final norm and softmax cross-entropy, forward + backward.
double loss_cost_per_token(const ModelConfig& c, const CostModel& m = {});
// Elements one decoder layer keeps per token for its backward pass (an estimate
// of our implementation; cost_model.cpp lists what is counted).
double activation_elements_per_token_per_layer(const ModelConfig& c);

// Cost of stage `stage` of `pp` holding `s`.
StageCost stage_cost(const ModelConfig& c, const StageSpec& s, int stage, int pp,
                     const CostModel& m = {});

}  // namespace wiola
