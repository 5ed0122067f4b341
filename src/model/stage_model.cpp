#include "model/stage_model.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/param_names.hpp"
#include "ops/spiral_rope_table.hpp"
#include "ops/srpe_table.hpp"

namespace wiola {

StageModel::StageModel(Backend& backend, const ModelConfig& config, const StageSpec& spec,
                       DType dtype)
    : StageModel(backend, config, std::vector<StageSpec>{spec}, dtype) {}

StageModel::StageModel(Backend& backend, const ModelConfig& config,
                       std::vector<StageSpec> chunks, DType dtype)
    : backend_(backend), config_(config), chunks_(std::move(chunks)), dtype_(dtype),
      params_(backend, ParamLayout(config, chunks_), dtype) {
  config_.validate();
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    require(chunks_[c].num_layers() >= 1, "a stage (chunk ", c, ") must hold at least one layer");
    require(!chunks_[c].embed || c == 0, "only a stage's first chunk can hold the embedding");
    require(!chunks_[c].head || c + 1 == chunks_.size(),
            "only a stage's last chunk can hold the head");
  }
  shared_.backend = &backend_;
  shared_.config = &config_;
  shared_.dtype = dtype_;
  const int half = config_.head_dim() / 2;
  std::vector<double> cos_tab, sin_tab;
  if (config_.main_family())
    srpe_coefficients(config_.T, config_.head_dim(), config_.theta0, config_.k_s, config_.a_s,
                      config_.f_s, cos_tab, sin_tab);
  else  // Wiola 13M: spiral RoPE on interleaved pairs
    spiral_rope_coefficients(config_.T, config_.head_dim(), config_.theta0, config_.alpha,
                             cos_tab, sin_tab);
  // The coefficients stay fp32 when computing in bf16 (SPEC: angles with care).
  shared_.srpe_cos = backend_.alloc(wide_dtype(dtype_), config_.T, half);
  shared_.srpe_sin = backend_.alloc(wide_dtype(dtype_), config_.T, half);
  from_host_f64(backend_, cos_tab, shared_.srpe_cos);
  from_host_f64(backend_, sin_tab, shared_.srpe_sin);
  std::size_t held = 0;
  for (const StageSpec& chunk : chunks_) {
    chunk_begin_.push_back(held);
    for (int l = chunk.first_layer; l < chunk.end_layer; ++l, ++held) {
      if (config_.main_family())
        layers_.emplace_back(shared_, l, LayerWeights::params(params_, l), params_);
      else
        layers13m_.emplace_back(shared_, l, Layer13mWeights::params(params_, l), params_);
    }
  }
  chunk_begin_.push_back(held);
}

std::vector<int> StageModel::held_layers() const {
  std::vector<int> out;
  for (const StageSpec& c : chunks_)
    for (int l = c.first_layer; l < c.end_layer; ++l) out.push_back(l);
  return out;
}

Tensor StageModel::final_delta(bool grad) const {
  if (!config_.main_family()) return Tensor{};
  return grad ? params_.grad(param_names::kFinalNormDelta)
              : params_.param(param_names::kFinalNormDelta);
}

Tensor StageModel::alloc(std::int64_t rows, std::int64_t cols) const {
  return backend_.alloc(dtype_, rows, cols);
}

int StageModel::carry_count(int layer) const { return boundary_carry(config_, layer); }

int StageModel::summary_base(int chunk) const {
  const int first = chunks_[std::size_t(chunk)].first_layer;
  return first - carry_count(first);
}

std::shared_ptr<const DevicePlan> StageModel::plain_plan_for(int batch, int seq) {
  auto& slot = plain_plans_[{batch, seq}];
  if (!slot)
    slot = std::make_shared<const DevicePlan>(
        upload_plan(backend_, plain_plan(batch, seq, config_.summary)));
  return slot;
}

std::int64_t StageModel::merged_tokens(const StageSaved& saved) {
  const std::int64_t plain = std::int64_t(saved.batch) * saved.seq;
  std::int64_t n = plain * static_cast<std::int64_t>(saved.layers13m.size());
  for (const LayerSaved& ls : saved.layers)
    if (ls.plan) n += ls.plan->merged_tokens(backend_, saved.batch, saved.seq);
  return n;
}

std::int64_t StageModel::summary_rows(int batch, int seq) const {
  return config_.summary == SummaryMode::Causal ? std::int64_t(batch) * seq : batch;
}

StageOutput StageModel::forward(const StageInput& in, bool training, StageSaved& saved,
                                LayerBoundaries* boundaries) {
  const int B = in.batch, T = in.seq, d = config_.d;
  const std::int64_t N = std::int64_t(B) * T;
  require(B > 0 && T > 0, "forward: empty micro-batch (", B, " x ", T, ")");
  require(T <= config_.T, "forward: sequence length ", T, " exceeds the model context T = ",
          config_.T);
  require(in.chunk >= 0 && in.chunk < num_chunks(), "forward: chunk ", in.chunk, " of a stage of ",
          num_chunks());
  const StageSpec& spec = chunks_[std::size_t(in.chunk)];
  saved = StageSaved{};
  saved.chunk = in.chunk;
  saved.batch = B;
  saved.seq = T;

  if (boundaries && (spec.embed || spec.head)) boundaries->before_layer_forward(-1);
  Tensor x;
  if (spec.embed) {
    require(in.tokens.defined() && in.tokens.rows() == N, "forward: first stage needs ", N,
            " tokens");
    saved.tokens = in.tokens;
    x = alloc(N, d);
    backend_.embedding_fwd(in.tokens, params_.param(param_names::kEmbed), x);
  } else {
    require(in.x.defined() && in.x.rows() == N && in.x.cols() == d,
            "forward: stage input must be ", N, "x", d);
    require(static_cast<int>(in.carry.size()) == carry_count(spec.first_layer),
            "forward: stage starting at layer ", spec.first_layer, " needs ",
            carry_count(spec.first_layer), " carried summaries, got ", in.carry.size());
    x = in.x;
    saved.summaries = in.carry;
  }

  if (!config_.main_family()) {
    x = forward_layers_13m(x, training, saved, boundaries);
  }
  const int base = summary_base(in.chunk);
  const std::size_t begin = chunk_begin_[std::size_t(in.chunk)];
  const std::size_t count = config_.main_family() ? chunk_begin_[std::size_t(in.chunk) + 1] - begin : 0;
  saved.layers.resize(count);
  // This chunk's summaries one after another in one buffer, so that a
  // layer's context is one run of rows (Backend::joins_products) unless it
  // reaches back to a carried summary: copying that in would cost more than
  // the products it saves on the stage's first layer.
  const std::int64_t srows = summary_rows(B, T);
  const Tensor own = count > 0 ? backend_.alloc_uninit(dtype_, srows * std::int64_t(count), d)
                               : Tensor{};
  for (std::size_t i = 0; i < count; ++i) {
    DecoderLayer& layer = layers_[begin + i];
    const int l = layer.index();
    const std::int64_t row = srows * std::int64_t(i);
    saved.summaries.push_back(own.rows_slice(row, row + srows));  // s_l, written whole
    backend_.summary_fwd(config_.summary, x, B, T, saved.summaries.back());
    const int ctx_first = std::max(base, l - config_.Lambda + 1);
    std::span<const Tensor> ctx(saved.summaries.data() + (ctx_first - base), l - ctx_first + 1);
    std::shared_ptr<const DevicePlan> plan;
    if (!(training && config_.atm_layer(l))) plan = plain_plan_for(B, T);
    LayerSaved& ls = saved.layers[i];
    const Tensor input = x;
    if (boundaries) boundaries->before_layer_forward(l);
    x = layer.forward(x, ctx, plan, B, T, ls);
    if (recompute_ && training) {
      // Keep the layer's input and its token plan; backward runs the layer
      // again from them (the ops are deterministic: the same activations).
      std::shared_ptr<const DevicePlan> kept = ls.plan;
      ls = LayerSaved{};
      ls.plan = std::move(kept);
      ls.x = input;
    }
  }

  StageOutput out;
  if (spec.head) {
    saved.x_last = x;
    // Outputs the next op writes whole: not zero-filled.
    saved.xf = backend_.alloc_uninit(dtype_, N, d);
    saved.rstd_f = backend_.alloc_uninit(wide_dtype(dtype_), N, 1);
    backend_.wrmsnorm_fwd(x, params_.param(param_names::kFinalNormGamma), final_delta(false),
                          config_.eps, saved.xf, saved.rstd_f);
    require(in.targets.defined() && in.targets.rows() == N, "forward: last stage needs ", N,
            " targets");
    saved.targets = in.targets;
    Tensor loss = backend_.alloc_uninit(wide_dtype(dtype_), N, 1);
    saved.lse = backend_.alloc_uninit(wide_dtype(dtype_), N, 1);
    const Tensor embed = params_.param(param_names::kEmbed);
    if (backend_.head_loss_keeps_no_logits()) {
      HeadLossGrads grads;
      if (training && in.loss_scale > 0) {
        // The gradients now, from the same logits (their weight gradient is
        // then not deferred by a split backward).
        saved.dxf = backend_.alloc_uninit(dtype_, N, d);
        saved.dxf_scale = in.loss_scale;
        grads = {in.loss_scale, saved.dxf, params_.grad(param_names::kEmbed)};
      }
      backend_.head_loss_fwd(saved.xf, embed, in.targets, loss, saved.lse, grads);
    } else {
      saved.logits = backend_.alloc_uninit(dtype_, N, config_.V);
      backend_.linear_fwd(saved.xf, embed, saved.logits, false);
      backend_.cross_entropy_fwd(saved.logits, in.targets, loss, saved.lse);
    }
    out.loss_sum = in.loss_sum.defined() ? in.loss_sum : backend_.alloc(DType::F64, 1, 1);
    backend_.sum(loss, out.loss_sum);
  } else {
    out.x = x;
    const int k = carry_count(spec.end_layer);
    out.carry.assign(saved.summaries.end() - k, saved.summaries.end());
  }
  saved.pending = true;
  return out;
}

StageGrads StageModel::backward(const Tensor& dx_out, std::span<const Tensor> dcarry_out,
                                double loss_scale, StageSaved& saved,
                                LayerBoundaries* boundaries_now, bool split) {
  require(saved.pending, "backward: no forward pending for this micro-batch");
  const int B = saved.batch, T = saved.seq, d = config_.d;
  const std::int64_t N = std::int64_t(B) * T;
  const int chunk = saved.chunk;
  const StageSpec& spec = chunks_[std::size_t(chunk)];
  const int base = summary_base(chunk);
  WeightGradQueue* defer = split ? &saved.deferred : nullptr;
  LayerBoundaries* const boundaries = split ? nullptr : boundaries_now;

  // Gradient accumulators of every summary this stage touched, laid out as
  // the summaries are (one zeroed buffer).
  const std::int64_t ds_rows = total_rows(saved.summaries);
  const std::vector<Tensor> ds =
      rows_like(ds_rows > 0 ? alloc(ds_rows, d) : Tensor{}, saved.summaries);

  Tensor dx;
  if (spec.head) {
    const Tensor embed = params_.param(param_names::kEmbed);
    const Tensor dembed = params_.grad(param_names::kEmbed);
    Tensor dxf = saved.dxf;  // made by the forward, or now
    if (dxf.defined()) {
      require(loss_scale == saved.dxf_scale, "backward: loss scale ", loss_scale,
              " differs from the ", saved.dxf_scale, " the forward made the head's gradients with");
    } else if (saved.logits.defined()) {
      dxf = backend_.alloc_uninit(dtype_, N, d);
      // The logits buffer becomes its own gradient.
      backend_.cross_entropy_bwd(saved.logits, saved.targets, saved.lse, loss_scale,
                                 saved.logits);
      linear_weight_grad(backend_, defer, saved.logits, saved.xf, dembed);
      backend_.linear_bwd_data(saved.logits, embed, dxf, false);
    } else {
      dxf = backend_.alloc_uninit(dtype_, N, d);
      // Its weight gradient is not deferred: that would make the logits a
      // third time, or keep their gradient whole.
      backend_.head_loss_bwd(saved.xf, embed, saved.targets, saved.lse, loss_scale, dxf, dembed);
    }
    dx = backend_.alloc_uninit(dtype_, N, d);  // written whole (accumulate = false)
    backend_.wrmsnorm_bwd(saved.x_last, params_.param(param_names::kFinalNormGamma),
                          final_delta(false), saved.rstd_f, dxf, dx, false,
                          params_.grad(param_names::kFinalNormGamma), final_delta(true));
  } else {
    require(dx_out.defined() && dx_out.rows() == N && dx_out.cols() == d,
            "backward: output gradient must be ", N, "x", d);
    const int k = carry_count(spec.end_layer);
    require(static_cast<int>(dcarry_out.size()) == k, "backward: expected ", k,
            " carried summary gradients, got ", dcarry_out.size());
    dx = alloc(N, d);
    backend_.copy(dx_out, dx);
    for (int j = 0; j < k; ++j) backend_.axpy(1.0, dcarry_out[j], ds[ds.size() - k + j]);
  }

  if (!config_.main_family()) dx = backward_layers_13m(dx, saved, boundaries, defer);
  const std::size_t begin = chunk_begin_[std::size_t(chunk)];
  for (int i = static_cast<int>(saved.layers.size()) - 1; i >= 0; --i) {
    DecoderLayer& layer = layers_[begin + std::size_t(i)];
    const int l = layer.index();
    const int ctx_first = std::max(base, l - config_.Lambda + 1);
    const std::size_t off = ctx_first - base, n = l - ctx_first + 1;
    const std::span<const Tensor> ctx(saved.summaries.data() + off, n);
    LayerSaved& ls = saved.layers[i];
    if (recompute_) {
      LayerSaved again;
      layer.forward(ls.x, ctx, ls.plan, B, T, again);
      ls = std::move(again);
    }
    dx = layer.backward(dx, ctx, std::span<const Tensor>(ds.data() + off, n), ls, defer);
    // Every user of s_l (layers l .. l+Λ-1, and the next stage) is done now.
    backend_.summary_bwd(config_.summary, ds[l - base], B, T, dx);
    if (boundaries) boundaries->layer_grads_final(l);
  }

  StageGrads g;
  if (spec.embed) {
    backend_.embedding_bwd(saved.tokens, dx, params_.grad(param_names::kEmbed));
  } else {
    g.dx = dx;
    g.dcarry.assign(ds.begin(), ds.begin() + (spec.first_layer - base));
  }
  if (split) {
    WeightGradQueue deferred = std::move(saved.deferred);
    saved = StageSaved{};
    saved.deferred = std::move(deferred);
    saved.weights_pending = true;
  } else {
    saved = StageSaved{};
  }
  return g;
}

Tensor StageModel::logits(const StageSaved& saved) {
  if (saved.logits.defined()) return saved.logits;
  require(saved.xf.defined(), "logits: no forward of the last stage is pending");
  Tensor z = backend_.alloc_uninit(dtype_, saved.xf.rows(), config_.V);
  backend_.linear_fwd(saved.xf, params_.param(param_names::kEmbed), z, false);
  return z;
}

void StageModel::backward_weights(StageSaved& saved, LayerBoundaries* boundaries) {
  require(saved.weights_pending, "backward: no weight gradients pending for this micro-batch");
  saved.deferred.run(backend_, boundaries);
  saved = StageSaved{};
}

}  // namespace wiola

namespace wiola {

Tensor StageModel::forward_layers_13m(Tensor x, bool training, StageSaved& saved,
                                      LayerBoundaries* boundaries) {
  const int B = saved.batch, T = saved.seq;
  const std::shared_ptr<const DevicePlan> plan = plain_plan_for(B, T);
  const std::size_t begin = chunk_begin_[std::size_t(saved.chunk)];
  saved.layers13m.resize(chunk_begin_[std::size_t(saved.chunk) + 1] - begin);
  for (std::size_t i = 0; i < saved.layers13m.size(); ++i) {
    Wiola13mLayer& layer = layers13m_[begin + i];
    Layer13mSaved& ls = saved.layers13m[i];
    const Tensor input = x;
    if (boundaries) boundaries->before_layer_forward(layer.index());
    x = layer.forward(x, plan, B, T, ls);
    if (recompute_ && training) {
      ls = Layer13mSaved{};
      ls.plan = plan;
      ls.x = input;
    }
  }
  return x;
}

Tensor StageModel::backward_layers_13m(Tensor dx, StageSaved& saved,
                                       LayerBoundaries* boundaries,
                                       WeightGradQueue* defer) {
  const int B = saved.batch, T = saved.seq;
  const std::size_t begin = chunk_begin_[std::size_t(saved.chunk)];
  for (int i = static_cast<int>(saved.layers13m.size()) - 1; i >= 0; --i) {
    Wiola13mLayer& layer = layers13m_[begin + std::size_t(i)];
    Layer13mSaved& ls = saved.layers13m[i];
    if (recompute_) {
      Layer13mSaved again;
      layer.forward(ls.x, ls.plan, B, T, again);
      ls = std::move(again);
    }
    dx = layer.backward(dx, ls, defer);
    if (boundaries) boundaries->layer_grads_final(layer.index());
  }
  return dx;
}

}  // namespace wiola
