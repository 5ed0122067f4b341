#pragma once
// A small harness around StageModel for whole-model tests: a tiny
// configuration, deterministic tokens, and one-call forward/backward.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.hpp"
#include "model/stage_model.hpp"

namespace wiola::test {

inline ModelConfig tiny_config(SummaryMode summary = SummaryMode::Causal,
                               AtmMode atm = AtmMode::Causal, double tau = 0.0) {
  ModelConfig c = preset("wiola-tiny");  // d 16, L 5, H 4, Hkv 2
  c.V = 29;
  c.T = 12;
  c.summary = summary;
  c.atm = atm;
  c.tau = tau;
  c.init_std = 0.2;  // larger than the default so every path carries signal
  return c;
}

inline std::vector<std::int32_t> random_tokens(std::size_t n, int vocab, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> dist(0, vocab - 1);
  std::vector<std::int32_t> t(n);
  for (auto& x : t) x = dist(gen);
  return t;
}

inline Tensor upload_i32(Backend& be, const std::vector<std::int32_t>& v) {
  Tensor t = be.alloc(DType::I32, static_cast<std::int64_t>(v.size()), 1);
  be.from_host(v.data(), t);
  return t;
}

// Tokens [B*(T+1)] split into inputs and targets.
struct Batch {
  int B = 0, T = 0;
  std::vector<std::int32_t> inputs, targets;
  // Targets that count in the loss (the host knows; nothing is read back).
  double tokens() const {
    double n = 0;
    for (std::int32_t t : targets) n += t >= 0;
    return n;
  }
};

// Σ per-token loss of a last stage's forward, read back from the backend.
inline double loss_sum(Backend& be, const StageOutput& out) {
  return to_host_f64(be, out.loss_sum)[0];
}

inline Batch make_batch(int B, int T, int vocab, std::uint64_t seed) {
  const auto w = random_tokens(std::size_t(B) * (T + 1), vocab, seed);
  Batch b;
  b.B = B;
  b.T = T;
  for (int s = 0; s < B; ++s)
    for (int t = 0; t < T; ++t) {
      b.inputs.push_back(w[std::size_t(s) * (T + 1) + t]);
      b.targets.push_back(w[std::size_t(s) * (T + 1) + t + 1]);
    }
  return b;
}

// The whole model on one stage.
struct WholeModel {
  std::unique_ptr<Backend> be = make_cpu_backend();
  std::unique_ptr<StageModel> model;
  WholeModel(const ModelConfig& c, DType dtype, std::uint64_t seed = 7) {
    model = std::make_unique<StageModel>(*be, c, StageSpec::whole(c), dtype);
    model->params().init(seed);
  }
  StageInput input(const Batch& b) {
    StageInput in;
    in.batch = b.B;
    in.seq = b.T;
    in.tokens = upload_i32(*be, b.inputs);
    in.targets = upload_i32(*be, b.targets);
    return in;
  }
  // Mean loss over the batch.
  double loss(const Batch& b, bool training) {
    StageSaved saved;
    const StageOutput out = model->forward(input(b), training, saved);
    return loss_sum(*be, out) / b.tokens();
  }
  // Logits [B*T, V] as doubles.
  std::vector<double> logits(const Batch& b, bool training) {
    StageSaved saved;
    model->forward(input(b), training, saved);
    return to_host_f64(*be, model->logits(saved));
  }
  // Mean loss; gradients of the mean loss land in params().grads().
  double loss_and_grads(const Batch& b, bool training) {
    model->params().zero_grads();
    StageSaved saved;
    const StageOutput out = model->forward(input(b), training, saved);
    model->backward(Tensor{}, {}, 1.0 / b.tokens(), saved);
    return loss_sum(*be, out) / b.tokens();
  }
};

}  // namespace wiola::test
