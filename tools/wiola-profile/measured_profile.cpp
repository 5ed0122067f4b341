#include "wiola-profile/measured_profile.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "model/flops.hpp"
#include "partition/partition.hpp"

namespace wiola::profile {

// ---- per-layer times ---------------------------------------------------------

namespace {

// Training FLOPs per token of each part (the one formula; the embedding
// lookup has none, so it gets no share).
struct PartCosts {
  std::vector<double> layers;
  double embed = 0, head = 0;
};

PartCosts part_costs(const ModelConfig& c) {
  PartCosts p;
  for (int l = 0; l < c.L; ++l) p.layers.push_back(3.0 * layer_forward_flops_per_token(c, l));
  p.head = 3.0 * head_forward_flops_per_token(c);
  return p;
}

PartTimes part_json(const Json& j) {
  return {j.at("forward_s").as_number(), j.at("backward_s").as_number()};
}

Json part_to_json(const PartTimes& p) {
  return Json::object().set("forward_s", p.forward_s).set("backward_s", p.backward_s);
}

LayerTimes layer_times_from_json(const Json& j) {
  LayerTimes t;
  t.micro_batch = int(j.at("micro_batch").as_int());
  for (const Json& l : j.at("layers").items()) t.layers.push_back(part_json(l));
  t.embed = part_json(j.at("embed"));
  t.head = part_json(j.at("head"));
  return t;
}

}  // namespace

LayerTimes derive_layer_times(const RunLayout& layout, const std::vector<StageMetrics>& stages) {
  const ModelConfig& c = layout.model;
  const PartCosts costs = part_costs(c);
  LayerTimes t;
  t.micro_batch = layout.micro_batch;
  t.layers.resize(std::size_t(c.L));
  for (const StageMetrics& sm : stages) {
    const StageSpec& sp = sm.spec;
    double total = 0;
    for (int l = sp.first_layer; l < sp.end_layer; ++l) total += costs.layers[std::size_t(l)];
    if (sp.embed) total += costs.embed;
    if (sp.head) total += costs.head;
    if (total <= 0) continue;
    auto share = [&](double cost) {
      return PartTimes{sm.forward_s * cost / total, sm.backward_s * cost / total};
    };
    for (int l = sp.first_layer; l < sp.end_layer; ++l)
      t.layers[std::size_t(l)] = share(costs.layers[std::size_t(l)]);
    if (sp.embed) t.embed = share(costs.embed);
    if (sp.head) t.head = share(costs.head);
  }
  return t;
}

double optimizer_seconds_per_param(const RunLayout& layout, const Metrics& metrics) {
  double sum = 0;
  for (const RankMetrics& r : metrics.ranks) {
    const double params =
        double(layout.stage_params(r.stage)) / (layout.zero >= 1 ? layout.dp : 1);
    sum += r.t.optimizer / std::max(params, 1.0);
  }
  return metrics.ranks.empty() ? 0 : sum / double(metrics.ranks.size());
}

Json layer_times_json(const LayerTimes& t) {
  Json layers = Json::array();
  for (std::size_t l = 0; l < t.layers.size(); ++l)
    layers.push(part_to_json(t.layers[l]).set("layer", int(l)));
  return Json::object()
      .set("micro_batch", t.micro_batch)
      .set("method",
           "each stage's measured forward/backward time split over its layers and head in "
           "proportion to their training FLOPs (model/flops.hpp)")
      .set("layers", std::move(layers))
      .set("embed", part_to_json(t.embed))
      .set("head", part_to_json(t.head));
}

// ---- the profile -------------------------------------------------------------

MeasuredProfile measured_profile(const ProfileResult& r) {
  const Metrics& m = r.metrics;
  MeasuredProfile p;
  p.layout = r.layout;
  p.link = r.link;
  for (const RankMetrics& k : m.ranks) p.peak_flops += k.peak_flops;
  if (!m.ranks.empty()) p.peak_flops /= double(m.ranks.size());
  for (const StageMetrics& s : m.stages)
    p.stages.push_back({s.forward_s, s.backward_s, s.t.optimizer, s.outside_s, s.t.bubble()});
  p.layer_times = derive_layer_times(r.layout, m.stages);
  p.optimizer_s_per_param = optimizer_seconds_per_param(r.layout, m);
  p.step_s = m.overall.step_s;
  p.bubble = m.overall.bubble;
  p.tokens_per_s = m.overall.tokens_per_s;
  return p;
}

namespace {

// The model fields profile.json records (report.cpp writes them).
ModelConfig model_from_json(const Json& j) {
  ModelConfig c;
  c.preset = j.at("preset").as_string();
  c.d = int(j.at("d").as_int());
  c.L = int(j.at("layers").as_int());
  c.H = int(j.at("heads").as_int());
  c.Hkv = int(j.at("kv_heads").as_int());
  c.dA = int(j.at("dsff_a").as_int());
  c.dB = int(j.at("dsff_b").as_int());
  c.V = int(j.at("vocab").as_int());
  c.T = int(j.at("seq_len").as_int());
  c.Lambda = int(j.at("lambda").as_int());
  c.summary = parse_summary_mode(j.at("summary").as_string());
  c.atm = parse_atm_mode(j.at("atm").as_string());
  return c;
}

RunLayout layout_from_json(const Json& j, const ModelConfig& model) {
  RunLayout l;
  l.model = model;
  l.pp = int(j.at("pp").as_int());
  l.dp = int(j.at("dp").as_int());
  l.micro_batch = int(j.at("micro_batch").as_int());
  l.microbatches = int(j.at("microbatches").as_int());
  l.global_batch = int(j.at("global_batch").as_int());
  l.zero = int(j.at("zero").as_int());
  l.threads = int(j.at("threads").as_int());
  l.schedule = pipeline::parse_schedule_kind(j.at("schedule").as_string());
  l.dtype = parse_dtype(j.at("dtype").as_string());
  std::string split;
  for (const Json& n : j.at("stage_layers").items()) {
    if (!split.empty()) split += ",";
    split += std::to_string(n.as_int());
  }
  l.stages = parse_stage_layers(split, model, l.pp);
  return l;
}

}  // namespace

MeasuredProfile measured_profile_from_json(const Json& j, const std::string& origin) {
  try {
    MeasuredProfile p;
    p.layout = layout_from_json(j.at("layout"), model_from_json(j.at("model")));
    const Json& link = j.at("link");
    p.link.measured = link.at("measured").as_bool();
    p.link.latency_s = link.at("latency_s").as_number();
    p.link.bandwidth_Bps = link.at("bandwidth_Bps").as_number();
    p.link.bytes = std::size_t(link.at("bytes").as_number());
    p.peak_flops = j.at("peak").at("mean_per_rank_flops").as_number();
    for (const Json& s : j.at("stages").items())
      p.stages.push_back({s.at("forward_s").as_number(), s.at("backward_s").as_number(),
                          s.at("optimizer_s").as_number(), s.at("outside_actions_s").as_number(),
                          s.at("bubble").as_number()});
    p.layer_times = layer_times_from_json(j.at("layer_times"));
    p.optimizer_s_per_param = j.at("optimizer_seconds_per_param").as_number();
    const Json& o = j.at("overall");
    p.step_s = o.at("step_s").as_number();
    p.bubble = o.at("bubble").as_number();
    p.tokens_per_s = o.at("tokens_per_s").as_number();
    return p;
  } catch (const Error& e) {
    fail(origin, ": not a wiola-profile profile.json: ", e.what());
  }
}

MeasuredProfile read_measured_profile(const std::string& path) {
  const std::string text = read_text_file(path);
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
  return measured_profile_from_json(doc, path);
}

}  // namespace wiola::profile
