#include "wiola-profile/measured_profile.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "model/flops.hpp"
#include "partition/partition.hpp"
#include "wiola-profile/model_fields.hpp"

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

PartTimes part_from_json(const Json& j) {
  return {j.at("forward_s").get<double>(), j.at("backward_s").get<double>()};
}

Json part_to_json(const PartTimes& p) {
  return {{"forward_s", p.forward_s}, {"backward_s", p.backward_s}};
}

LayerTimes layer_times_from_json(const Json& j) {
  LayerTimes t;
  t.micro_batch = j.at("micro_batch").get<int>();
  for (const Json& l : j.at("layers")) t.layers.push_back(part_from_json(l));
  t.embed = part_from_json(j.at("embed"));
  t.head = part_from_json(j.at("head"));
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
    // The stage's times cover all its chunks (one with v = 1).
    const std::vector<StageSpec> chunks =
        sm.chunks.empty() ? std::vector<StageSpec>{sm.spec} : sm.chunks;
    double total = 0;
    for (const StageSpec& sp : chunks) {
      for (int l = sp.first_layer; l < sp.end_layer; ++l) total += costs.layers[std::size_t(l)];
      if (sp.embed) total += costs.embed;
      if (sp.head) total += costs.head;
    }
    if (total <= 0) continue;
    auto share = [&](double cost) {
      return PartTimes{sm.forward_s * cost / total, sm.backward_s * cost / total};
    };
    for (const StageSpec& sp : chunks) {
      for (int l = sp.first_layer; l < sp.end_layer; ++l)
        t.layers[std::size_t(l)] = share(costs.layers[std::size_t(l)]);
      if (sp.embed) t.embed = share(costs.embed);
      if (sp.head) t.head = share(costs.head);
    }
  }
  return t;
}

double optimizer_seconds_per_param(const RunLayout& layout, const Metrics& metrics) {
  double sum = 0;
  for (const RankMetrics& r : metrics.ranks) {
    const double params =
        double(layout.rank_params(r.stage)) / (layout.zero >= 1 ? layout.dp : 1);
    sum += r.t.optimizer / std::max(params, 1.0);
  }
  return metrics.ranks.empty() ? 0 : sum / double(metrics.ranks.size());
}

Json layer_times_json(const LayerTimes& t) {
  Json layers = Json::array();
  for (std::size_t l = 0; l < t.layers.size(); ++l) {
    Json j = part_to_json(t.layers[l]);
    j["layer"] = int(l);
    layers.push_back(std::move(j));
  }
  return {{"micro_batch", t.micro_batch},
          {"method",
           "each stage's measured forward/backward time split over its layers and head in "
           "proportion to their training FLOPs (model/flops.hpp)"},
          {"layers", std::move(layers)},
          {"embed", part_to_json(t.embed)},
          {"head", part_to_json(t.head)}};
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
    p.stages.push_back(
        {s.forward_s, s.backward_s, s.t.optimizer, s.outside_s, s.t.bubble(), s.weight_s});
  p.layer_times = derive_layer_times(r.layout, m.stages);
  p.optimizer_s_per_param = optimizer_seconds_per_param(r.layout, m);
  p.step_s = m.overall.step_s;
  p.bubble = m.overall.bubble;
  p.tokens_per_s = m.overall.tokens_per_s;
  return p;
}

namespace {

RunLayout layout_from_json(const Json& j, const ModelConfig& model) {
  RunLayout l;
  l.model = model;
  l.pp = j.at("pp").get<int>();
  l.dp = j.at("dp").get<int>();
  l.micro_batch = j.at("micro_batch").get<int>();
  l.microbatches = j.at("microbatches").get<int>();
  l.global_batch = j.at("global_batch").get<int>();
  l.zero = j.at("zero").get<int>();
  l.threads = j.at("threads").get<int>();
  l.schedule = pipeline::parse_schedule_kind(j.at("schedule").get<std::string>());
  l.virtual_stages = j.value("virtual_stages", 1);  // absent before interleaved schedules
  l.dtype = parse_dtype(j.at("dtype").get<std::string>());
  std::string split;
  for (const Json& n : j.at("stage_layers")) {
    if (!split.empty()) split += ",";
    split += std::to_string(n.get<int>());
  }
  l.stages = parse_stage_layers(split, model, l.pp, std::max(l.virtual_stages, 1));
  return l;
}

}  // namespace

MeasuredProfile measured_profile_from_json(const Json& j, const std::string& origin) {
  try {
    MeasuredProfile p;
    p.layout = layout_from_json(j.at("layout"), model_from_json(j.at("model")));
    const Json& link = j.at("link");
    p.link.measured = link.at("measured").get<bool>();
    p.link.latency_s = link.at("latency_s").get<double>();
    p.link.bandwidth_Bps = link.at("bandwidth_Bps").get<double>();
    p.link.bytes = link.at("bytes").get<std::size_t>();
    p.peak_flops = j.at("peak").at("mean_per_rank_flops").get<double>();
    for (const Json& s : j.at("stages"))
      p.stages.push_back({s.at("forward_s").get<double>(), s.at("backward_s").get<double>(),
                          s.at("optimizer_s").get<double>(),
                          s.at("outside_actions_s").get<double>(), s.at("bubble").get<double>(),
                          s.value("weight_s", 0.0)});
    p.layer_times = layer_times_from_json(j.at("layer_times"));
    p.optimizer_s_per_param = j.at("optimizer_seconds_per_param").get<double>();
    const Json& o = j.at("overall");
    p.step_s = o.at("step_s").get<double>();
    p.bubble = o.at("bubble").get<double>();
    p.tokens_per_s = o.at("tokens_per_s").get<double>();
    return p;
  } catch (const Json::exception& e) {
    fail(origin, ": not a wiola-profile profile.json: ", e.what());
  }
}

MeasuredProfile read_measured_profile(const std::string& path) {
  return measured_profile_from_json(read_json_file(path), path);
}

}  // namespace wiola::profile
