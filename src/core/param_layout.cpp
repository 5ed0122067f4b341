#include "core/param_layout.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace wiola {

void ParamLayout::add(std::string name, int layer, std::int64_t rows, std::int64_t cols,
                      bool decay, InitKind init, double value, bool stacked) {
  // A stacked entry continues its predecessor's matrix; every other one starts
  // on the next aligned element (the constructor pads the end of the buffer too).
  if (!stacked) total_ = align_up(total_, kAlignElements);
  ParamSpec p;
  p.name = std::move(name);
  p.layer = layer;
  p.rows = rows;
  p.cols = cols;
  p.offset = total_;
  p.decay = decay;
  p.init = init;
  p.init_value = value;
  p.stacked = stacked;
  total_ += rows * cols;
  parameters_ += rows * cols;
  entries_.push_back(std::move(p));
}

ParamLayout::ParamLayout(const ModelConfig& c, const StageSpec& s)
    : ParamLayout(c, std::span<const StageSpec>(&s, 1)) {}

ParamLayout::ParamLayout(const ModelConfig& c, std::span<const StageSpec> chunks) {
  require(!chunks.empty(), "a stage must hold at least one chunk of layers");
  StageSpec s{chunks.front().first_layer, chunks.front().end_layer, false, false};
  std::vector<int> layers;  // every layer held, ascending
  for (const StageSpec& k : chunks) {
    require(0 <= k.first_layer && k.first_layer <= k.end_layer && k.end_layer <= c.L,
            "stage layers [", k.first_layer, ", ", k.end_layer, ") do not fit a model of ", c.L,
            " layers");
    require(layers.empty() || k.first_layer >= layers.back() + 1,
            "a stage's chunks must hold ascending, disjoint layer ranges (layer ", k.first_layer,
            " follows layer ", layers.empty() ? -1 : layers.back(), ")");
    for (int l = k.first_layer; l < k.end_layer; ++l) layers.push_back(l);
    s.embed = s.embed || k.embed;
    s.head = s.head || k.head;
  }
  const std::int64_t d = c.d, hd = std::int64_t(c.H) * c.head_dim(),
                     kvd = std::int64_t(c.Hkv) * c.head_dim();
  const double std_in = c.init_std, std_out = c.init_std / std::sqrt(2.0 * c.L);
  const auto normal = InitKind::Normal;
  const auto constant = InitKind::Constant;
  namespace names = param_names;
  namespace role = param_names::role;
  if (s.embed || s.head) add(names::kEmbed, -1, c.V, d, true, normal, std_in);
  if (!c.main_family()) {
    // Wiola 13M (SPEC "The Wiola 13M variant"): no δ, no biases but the gate's.
    const std::int64_t H = c.H, dh = c.head_dim(), dff = c.dff;
    for (int l : layers) {
      auto n = [&](const char* r, std::int64_t rows, std::int64_t cols, bool decay,
                   InitKind init, double value) {
        add(names::layer_param(l, r), l, rows, cols, decay, init, value);
      };
      n(role::kAttnNormGamma, 1, d, false, constant, 1.0);
      n(role::kQProj, hd, d, true, normal, std_in);
      n(role::kKProj, kvd, d, true, normal, std_in);
      n(role::kVProj, kvd, d, true, normal, std_in);
      n(role::kOProj, d, hd, true, normal, std_out);
      n(role::kGateW1, H, dh, true, normal, std_in);
      n(role::kGateW2, H, H, true, normal, std_in);
      n(role::kGateW2Bias, 1, H, false, constant, 0.0);  // every gate starts at σ(0) = 0.5
      n(role::kFfnNormGamma, 1, d, false, constant, 1.0);
      n(role::kUp, 2 * dff, d, true, normal, std_in);
      n(role::kBypass, dff, d, true, normal, std_in);
      n(role::kDown, d, dff, true, normal, std_out);
    }
    if (s.head) add(names::kFinalNormGamma, -1, 1, d, false, constant, 1.0);
    total_ = align_up(total_, kAlignElements);
    return;
  }
  for (int l : layers) {
    auto n = [&](const char* r, std::int64_t rows, std::int64_t cols, bool decay, InitKind init,
                 double value, bool stacked = false) {
      add(names::layer_param(l, r), l, rows, cols, decay, init, value, stacked);
    };
    n(role::kAttnNormGamma, 1, d, false, constant, 1.0);
    n(role::kAttnNormDelta, 1, d, false, constant, 0.0);
    n(role::kQProj, hd, d, true, normal, std_in);
    n(role::kGateProj, hd, d, true, normal, std_in, true);  // [wq; wgate] (layer.cpp)
    n(role::kKProj, kvd, d, true, normal, std_in);
    n(role::kVProj, kvd, d, true, normal, std_in, true);  // [wk; wv]
    n(role::kCtxKProj, kvd, d, true, normal, std_in);
    n(role::kCtxVProj, kvd, d, true, normal, std_in, true);  // [wck; wcv]
    n(role::kOProj, d, hd, true, normal, std_out);
    n(role::kCtxLogit, 1, 1, false, constant, -3.0);
    n(role::kFfnNormGamma, 1, d, false, constant, 1.0);
    n(role::kFfnNormDelta, 1, d, false, constant, 0.0);
    n(role::kAGate, c.dA, d, true, normal, std_in);
    n(role::kAUp, c.dA, d, true, normal, std_in, true);  // [a_gate; a_up]
    n(role::kADown, d, c.dA, true, normal, std_out);
    n(role::kBUp, c.dB, d, true, normal, std_in);
    n(role::kBDown, d, c.dB, true, normal, std_out);
    n(role::kFuse, d, 2 * d, true, normal, std_in);
  }
  if (s.head) {
    add(names::kFinalNormGamma, -1, 1, d, false, constant, 1.0);
    add(names::kFinalNormDelta, -1, 1, d, false, constant, 0.0);
  }
  total_ = align_up(total_, kAlignElements);
}

std::vector<std::pair<std::int64_t, std::int64_t>> ParamLayout::element_runs(
    std::int64_t begin, std::int64_t end) const {
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  for (const ParamSpec& p : entries_) {
    const std::int64_t lo = std::max(begin, p.offset), hi = std::min(end, p.offset + p.numel());
    if (lo >= hi) continue;
    if (!runs.empty() && runs.back().second == lo)
      runs.back().second = hi;
    else
      runs.emplace_back(lo, hi);
  }
  return runs;
}

bool ParamLayout::contains(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return true;
  return false;
}

const ParamSpec& ParamLayout::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return e;
  fail("parameter '", name, "' is not held by this stage");
}

void init_params_host(const ParamLayout& layout, std::uint64_t seed, std::vector<double>& host) {
  host.assign(static_cast<std::size_t>(layout.total()), 0.0);
  for (const auto& p : layout.entries()) {
    double* out = host.data() + p.offset;
    if (p.init == InitKind::Constant) {
      for (std::int64_t i = 0; i < p.numel(); ++i) out[i] = p.init_value;
      continue;
    }
    const std::uint64_t key = stream_key(seed, hash_name(p.name));
    for (std::int64_t i = 0; i < p.numel(); ++i)
      out[i] = p.init_value * normal(key, static_cast<std::uint64_t>(i));
  }
}

}  // namespace wiola
