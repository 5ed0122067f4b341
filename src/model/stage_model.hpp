#pragma once
// A pipeline stage of the Wiola model: a contiguous range of decoder layers,
// plus the embedding on the first stage and final norm + tied head + loss on
// the last. The one-process trainer runs a single stage holding everything.
//
// What crosses a stage boundary (docs/pipeline.md): the activation X_b and the
// GCLA summaries later layers still need but cannot recompute — with Λ = 2,
// the summary of X_{b-1} ("carry"). Backward returns the gradients of both.
// A Wiola 13M model (arch wiola13m) has no summaries: the activation alone.
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "core/model_config.hpp"
#include "model/layer.hpp"
#include "model/layer13m.hpp"
#include "model/param_store.hpp"

namespace wiola {

// Inputs of one micro-batch of B sequences of T tokens.
struct StageInput {
  int batch = 0, seq = 0;
  Tensor tokens;              // I32 [B*T, 1], first stage
  Tensor targets;             // I32 [B*T, 1], last stage (-1: ignored)
  Tensor x;                   // [B*T, d], other stages: X_{first_layer}
  std::vector<Tensor> carry;  // other stages: summaries of X_j, j in [first_layer - k, first_layer)
  // Last stage, optional: an F64 [1, 1] accumulator in backend memory that
  // receives += Σ per-token cross-entropy (a fresh one when empty).
  Tensor loss_sum;
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
  int batch = 0, seq = 0;
  Tensor tokens, targets;
  std::vector<Tensor> summaries;  // s_j for j in [summary_base, end_layer)
  std::vector<LayerSaved> layers;
  std::vector<Layer13mSaved> layers13m;  // Wiola 13M instead of `layers`
  Tensor x_last, xf, rstd_f, logits, lse;
  bool pending = false;
  std::int64_t merged_tokens = 0;  // Σ T' over the ATM layers (statistics)
};

class StageModel {
 public:
  StageModel(Backend& backend, const ModelConfig& config, const StageSpec& spec, DType dtype);

  const ModelConfig& config() const { return config_; }
  const StageSpec& spec() const { return spec_; }
  ParamStore& params() { return params_; }
  const ParamStore& params() const { return params_; }
  Backend& backend() const { return backend_; }
  DType dtype() const { return dtype_; }
  // The stage's layers, first_layer first (the cached decoder runs them itself).
  const std::vector<DecoderLayer>& layers() const { return layers_; }

  // Activation recomputation (--recompute full): a training forward keeps
  // only each layer's input (and token plan) and backward runs the layer's
  // forward again before its backward. Gradients are bit-identical.
  void set_recompute(bool on) { recompute_ = on; }
  bool recompute() const { return recompute_; }

  // How many summaries cross into a stage whose first layer is `layer` (none
  // in Wiola 13M).
  int carry_count(int layer) const;

  // Forward of one micro-batch. `training` turns ATM on in its layers.
  // `before_layer(l)`, when set, runs before layer l's forward, and
  // before_layer(-1) before the embedding or the head first use their
  // parameters (ZeRO's parameter gather finishes there).
  StageOutput forward(const StageInput& in, bool training, StageSaved& saved,
                      const std::function<void(int)>& before_layer = {});
  // Backward of the micro-batch in `saved`. The last stage starts from
  // loss_scale · Σ loss (pass dx/dcarry empty); other stages take the
  // gradients of their outputs. Parameter gradients are added to params().grads().
  // `layer_done(l)`, when set, runs right after layer l's parameter gradients
  // are complete for this micro-batch (ZeRO-2 starts reducing them then).
  StageGrads backward(const Tensor& dx_out, std::span<const Tensor> dcarry_out,
                      double loss_scale, StageSaved& saved,
                      const std::function<void(int)>& layer_done = {});

 private:
  std::shared_ptr<const DevicePlan> plain_plan_for(int batch, int seq);
  Tensor alloc(std::int64_t rows, std::int64_t cols) const;
  int summary_base() const;
  Tensor summary_of(const Tensor& x, int batch, int seq);
  // Wiola 13M's layers, forward and backward (no summaries).
  Tensor forward_layers_13m(Tensor x, bool training, StageSaved& saved,
                            const std::function<void(int)>& before_layer);
  Tensor backward_layers_13m(Tensor dx, StageSaved& saved,
                             const std::function<void(int)>& layer_done);
  // final_norm.delta, or an undefined tensor in Wiola 13M (plain RMSNorm).
  Tensor final_delta(bool grad) const;

  Backend& backend_;
  ModelConfig config_;
  StageSpec spec_;
  DType dtype_;
  ParamStore params_;
  LayerShared shared_;
  std::vector<DecoderLayer> layers_;       // the main family
  std::vector<Wiola13mLayer> layers13m_;   // Wiola 13M
  std::map<std::pair<int, int>, std::shared_ptr<const DevicePlan>> plain_plans_;
  bool recompute_ = false;
};

}  // namespace wiola
