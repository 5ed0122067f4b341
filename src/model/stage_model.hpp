#pragma once
// A pipeline stage of the Wiola model: a contiguous range of decoder layers,
// plus the embedding on the first stage and final norm + tied head + loss on
// the last. The one-process trainer runs a single stage holding everything.
// Under an interleaved schedule a rank holds several such chunks (virtual
// stages) in one parameter store; each forward and backward runs one chunk.
//
// What crosses a stage boundary (docs/pipeline.md): the activation X_b and the
// GCLA summaries later layers still need but cannot recompute — with Λ = 2,
// the summary of X_{b-1} ("carry"). Backward returns the gradients of both.
// A Wiola 13M model (arch wiola13m) has no summaries: the activation alone.
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "core/model_config.hpp"
#include "model/layer.hpp"
#include "model/layer_boundaries.hpp"
#include "model/layer13m.hpp"
#include "model/param_store.hpp"

namespace wiola {

// Inputs of one micro-batch of B sequences of T tokens.
struct StageInput {
  int chunk = 0;              // which of the stage's chunks runs
  int batch = 0, seq = 0;
  Tensor tokens;              // I32 [B*T, 1], first stage
  Tensor targets;             // I32 [B*T, 1], last stage (-1: ignored)
  Tensor x;                   // [B*T, d], other stages: X_{first_layer}
  std::vector<Tensor> carry;  // other stages: summaries of X_j, j in [first_layer - k, first_layer)
  // Last stage, optional: an F64 [1, 1] accumulator in backend memory that
  // receives += Σ per-token cross-entropy (a fresh one when empty).
  Tensor loss_sum;
  // Last stage, training, optional: the loss scale of the backward that will
  // follow (0: not known). A backend whose loss keeps no logits then makes
  // the head's gradients in the forward, from the same logits.
  double loss_scale = 0;
};

struct StageOutput {
  Tensor x;                   // X_{end_layer} (not on the last stage)
  std::vector<Tensor> carry;  // summaries the next stage needs (not on the last stage)
  // Last stage: the accumulator holding Σ per-token cross-entropy, in backend
  // memory (nothing is read back here; the caller counts the targets it gave).
  Tensor loss_sum;
};

struct StageGrads {
  Tensor dx;                   // gradient of StageInput::x (not on the first stage)
  std::vector<Tensor> dcarry;  // gradient of StageInput::carry
};

// Everything a micro-batch keeps from forward to backward on this stage.
struct StageSaved {
  int chunk = 0;
  int batch = 0, seq = 0;
  Tensor tokens, targets;
  std::vector<Tensor> summaries;  // s_j for j in [summary_base, end_layer)
  std::vector<LayerSaved> layers;
  std::vector<Layer13mSaved> layers13m;  // Wiola 13M instead of `layers`
  Tensor x_last, xf, rstd_f, logits, lse;
  // The head's input gradient, when the forward made it, and its loss scale.
  Tensor dxf;
  double dxf_scale = 0;
  bool pending = false;
  // A split backward's queued weight-gradient products (between B and W).
  WeightGradQueue deferred;
  bool weights_pending = false;
};

class StageModel {
 public:
  StageModel(Backend& backend, const ModelConfig& config, const StageSpec& spec, DType dtype);
  // Several chunks in ascending layer order, sharing one parameter store.
  StageModel(Backend& backend, const ModelConfig& config, std::vector<StageSpec> chunks,
             DType dtype);

  const ModelConfig& config() const { return config_; }
  int num_chunks() const { return static_cast<int>(chunks_.size()); }
  const StageSpec& chunk(int c) const { return chunks_.at(static_cast<std::size_t>(c)); }
  const std::vector<StageSpec>& chunks() const { return chunks_; }
  // Every layer held, ascending.
  std::vector<int> held_layers() const;
  ParamStore& params() { return params_; }
  const ParamStore& params() const { return params_; }
  Backend& backend() const { return backend_; }
  DType dtype() const { return dtype_; }
  // The stage's layers in chunk order (the cached decoder runs them itself).
  const std::vector<DecoderLayer>& layers() const { return layers_; }

  // Activation recomputation (--recompute full): a training forward keeps
  // only each layer's input (and token plan) and backward runs the layer's
  // forward again before its backward. Gradients are bit-identical.
  void set_recompute(bool on) { recompute_ = on; }
  bool recompute() const { return recompute_; }

  // How many summaries cross into a stage whose first layer is `layer` (none
  // in Wiola 13M).
  int carry_count(int layer) const;

  // Forward of one micro-batch through chunk in.chunk. `training` turns ATM
  // on in its layers.
  // `boundaries`, when given, hears before_layer_forward(l) before layer l's
  // forward, and before_layer_forward(-1) before the embedding or the head
  // first use their parameters (model/layer_boundaries.hpp).
  StageOutput forward(const StageInput& in, bool training, StageSaved& saved,
                      LayerBoundaries* boundaries = nullptr);
  // Σ T' over the layers of a forward's `saved` (B·T for a layer where
  // nothing merges). Reads the ATM plans' group counts from the backend, a
  // host synchronisation: statistics for tests and reports, not the step.
  std::int64_t merged_tokens(const StageSaved& saved);
  // The last stage's logits [B·T, V] of a forward's `saved`: the ones it
  // kept, or (on a backend whose loss keeps none) made again from the final
  // norm's output. For tests and dumps, not the step.
  Tensor logits(const StageSaved& saved);
  // Backward of the micro-batch in `saved` (its chunk). The last stage starts from
  // loss_scale · Σ loss (pass dx/dcarry empty); other stages take the
  // gradients of their outputs. Parameter gradients are added to params().grads().
  // `boundaries`, when given, hears layer_grads_final(l) right after layer
  // l's parameter gradients are complete for this micro-batch (the caller
  // gives it only for the step's last backward of the chunk).
  // With `split`, this is a zero-bubble schedule's B: the weight-gradient
  // products are queued in `saved` and `boundaries` is not called; then
  // backward_weights (W) completes them.
  StageGrads backward(const Tensor& dx_out, std::span<const Tensor> dcarry_out,
                      double loss_scale, StageSaved& saved,
                      LayerBoundaries* boundaries = nullptr, bool split = false);
  // W: the weight gradients a split backward left in `saved`;
  // boundaries->layer_grads_final(l) after each layer's.
  void backward_weights(StageSaved& saved, LayerBoundaries* boundaries = nullptr);

 private:
  std::shared_ptr<const DevicePlan> plain_plan_for(int batch, int seq);
  Tensor alloc(std::int64_t rows, std::int64_t cols) const;
  int summary_base(int chunk) const;
  // Rows of one GCLA summary of a micro-batch: a row per token (causal), or
  // per sequence.
  std::int64_t summary_rows(int batch, int seq) const;
  // Wiola 13M's layers, forward and backward (no summaries).
  Tensor forward_layers_13m(Tensor x, bool training, StageSaved& saved,
                            LayerBoundaries* boundaries);
  Tensor backward_layers_13m(Tensor dx, StageSaved& saved, LayerBoundaries* boundaries,
                             WeightGradQueue* defer);
  // final_norm.delta, or an undefined tensor in Wiola 13M (plain RMSNorm).
  Tensor final_delta(bool grad) const;

  Backend& backend_;
  ModelConfig config_;
  std::vector<StageSpec> chunks_;
  std::vector<std::size_t> chunk_begin_;  // [chunk] index of its first layer in layers_ / layers13m_
  DType dtype_;
  ParamStore params_;
  LayerShared shared_;
  std::vector<DecoderLayer> layers_;       // the main family
  std::vector<Wiola13mLayer> layers13m_;   // Wiola 13M
  std::map<std::pair<int, int>, std::shared_ptr<const DevicePlan>> plain_plans_;
  bool recompute_ = false;
};

}  // namespace wiola
