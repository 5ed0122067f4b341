#include "wiola-profile/projection.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "model/flops.hpp"
#include "partition/partition.hpp"
#include "profile/ini.hpp"
#include "profile/peak.hpp"
#include "wiola-profile/files.hpp"

namespace wiola::profile {

// ---- the spec ----------------------------------------------------------------

namespace {

constexpr double kGB = 1e9, kUs = 1e-6;

// Defaults taken from a profile: the profiled model and layout on a one-node
// cluster with the measured link and peak.
void defaults_from_profile(const MeasuredProfile& p, const std::string& path, KeyValues& kv) {
  const std::string origin = path;
  auto set = [&](const std::string& k, const std::string& v) { kv.set(k, v, origin); };
  auto num = [&](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return std::string(buf);
  };
  const ModelConfig& m = p.layout.model;
  set("model.preset", m.preset);
  set("model.d", num(m.d));
  set("model.layers", num(m.L));
  set("model.heads", num(m.H));
  set("model.kv_heads", num(m.Hkv));
  set("model.dsff_a", num(m.dA));
  set("model.dsff_b", num(m.dB));
  set("model.vocab", num(m.V));
  set("model.seq_len", num(m.T));
  set("model.lambda", num(m.Lambda));
  set("model.summary", std::string(summary_mode_name(m.summary)));
  const RunLayout& l = p.layout;
  set("run.pp", num(l.pp));
  set("run.micro_batch", num(l.micro_batch));
  set("run.global_batch", num(l.global_batch));
  set("run.zero", num(l.zero));
  set("run.schedule", std::string(pipeline::schedule_kind_name(l.schedule)));
  const double elem = double(dtype_size(l.dtype));
  set("run.activation_bytes", num(elem));
  set("run.grad_bytes", num(elem));
  set("run.param_bytes", num(elem));
  set("cluster.gpus_per_node", num(l.world()));
  set("cluster.nodes", "1");
  if (p.link.measured) {
    set("cluster.intra_latency_us", num(p.link.latency_s / kUs));
    set("cluster.intra_bandwidth_GBps", num(p.link.bandwidth_Bps / kGB));
  }
  set("cluster.peak_tflops", num(p.peak_flops / 1e12));
  set("times.profile", path);
}

bool same_model(const ModelConfig& a, const ModelConfig& b) {
  return a.d == b.d && a.L == b.L && a.H == b.H && a.Hkv == b.Hkv && a.dA == b.dA &&
         a.dB == b.dB && a.V == b.V && a.T == b.T && a.Lambda == b.Lambda && a.summary == b.summary;
}

ModelConfig model_from(const KeyValues& kv) {
  const std::string name = kv.text("model.preset", "");
  require(!name.empty(), "projection: set model.preset (e.g. wiola-1.5b)");
  ModelConfig c = preset(name);
  c.d = kv.integer("model.d", c.d);
  c.L = kv.integer("model.layers", c.L);
  c.H = kv.integer("model.heads", c.H);
  c.Hkv = kv.integer("model.kv_heads", c.Hkv);
  c.dA = kv.integer("model.dsff_a", c.dA);
  c.dB = kv.integer("model.dsff_b", c.dB);
  c.V = kv.integer("model.vocab", c.V);
  c.T = kv.integer("model.seq_len", c.T);
  c.Lambda = kv.integer("model.lambda", c.Lambda);
  if (auto s = kv.get("model.summary")) c.summary = parse_summary_mode(*s);
  c.validate();
  return c;
}

bool same_stages(const std::vector<StageSpec>& a, const std::vector<StageSpec>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].first_layer != b[i].first_layer || a[i].end_layer != b[i].end_layer) return false;
  return true;
}

// `preloaded` is the profile named `preloaded_name` when the caller has it already.
ProjectionSpec build_spec(const KeyValues& kv, const std::optional<MeasuredProfile>& preloaded,
                          const std::string& preloaded_name) {
  ProjectionSpec spec;
  RunLayout& L = spec.layout;
  L.model = model_from(kv);
  const ModelConfig& c = L.model;

  // The measured profile, when the times come from one.
  std::optional<MeasuredProfile> prof;
  const std::string prof_path = kv.text("times.profile", "");
  const bool is_json = preloaded.has_value();
  if (!prof_path.empty())
    prof = preloaded && prof_path == preloaded_name ? *preloaded : read_measured_profile(prof_path);

  // Cluster.
  Cluster& cl = spec.cluster;
  cl.ranks_per_node = kv.integer("cluster.gpus_per_node", 8);
  spec.nodes = kv.integer("cluster.nodes", 1);
  require(cl.ranks_per_node >= 1 && spec.nodes >= 1,
          "projection: cluster.gpus_per_node and cluster.nodes must be positive");
  cl.intra.latency_s = kv.number("cluster.intra_latency_us", 0.0) * kUs;
  cl.intra.bandwidth_Bps = kv.number("cluster.intra_bandwidth_GBps", 0.0) * kGB;
  cl.inter.latency_s = kv.number("cluster.inter_latency_us", cl.intra.latency_s / kUs) * kUs;
  cl.inter.bandwidth_Bps = kv.number("cluster.inter_bandwidth_GBps", cl.intra.bandwidth_Bps / kGB) * kGB;
  const std::string device = kv.text("cluster.device", "");
  if (!device.empty()) {
    const auto t = device_peak_tflops(device);
    require(t.has_value(), "projection: cluster.device '", device, "' is unknown (", known_devices(),
            "); give cluster.peak_tflops instead");
    spec.peak_flops = *t * 1e12;
    spec.peak_source = device + " bf16 dense peak";
  }
  if (kv.has("cluster.peak_tflops")) {
    spec.peak_flops = kv.number("cluster.peak_tflops", 0) * 1e12;
    spec.peak_source = prof && is_json ? "the profile's measured peak" : "cluster.peak_tflops";
  }
  spec.efficiency = kv.number("cluster.compute_efficiency", 0.5);
  spec.memory_Bps = kv.number("cluster.memory_bandwidth_GBps", 0.0) * kGB;
  spec.optimizer_bytes_per_param = kv.number("cluster.optimizer_bytes_per_param", 32.0);

  // Run.
  const int capacity = cl.ranks_per_node * spec.nodes;
  L.pp = kv.integer("run.pp", 1);
  require(L.pp >= 1 && L.pp <= c.L, "projection: run.pp = ", L.pp, " must be in [1, ", c.L, "]");
  L.dp = kv.integer("run.dp", capacity / L.pp);
  require(L.dp >= 1 && L.pp * L.dp <= capacity, "projection: pp ", L.pp, " x dp ", L.dp,
          " needs ", L.pp * L.dp, " ranks; the cluster has ", spec.nodes, " node(s) x ",
          cl.ranks_per_node, " = ", capacity);
  L.micro_batch = kv.integer("run.micro_batch", 1);
  require(L.micro_batch >= 1, "projection: run.micro_batch must be positive");
  if (kv.has("run.microbatches")) {
    L.microbatches = kv.integer("run.microbatches", 1);
    L.global_batch = L.microbatches * L.micro_batch * L.dp;
    kv.get("run.global_batch");  // superseded
  } else {
    L.global_batch = kv.integer("run.global_batch", L.micro_batch * L.dp * L.pp);
    require(L.global_batch % (L.micro_batch * L.dp) == 0, "projection: run.global_batch ",
            L.global_batch, " is not a multiple of micro_batch x dp = ", L.micro_batch * L.dp);
    L.microbatches = L.global_batch / (L.micro_batch * L.dp);
  }
  require(L.microbatches >= 1, "projection: fewer than one micro-batch per replica");
  L.schedule = pipeline::parse_schedule_kind(kv.text("run.schedule", "1f1b"));
  L.zero = kv.integer("run.zero", 0);
  require(L.zero >= 0 && L.zero <= 2, "projection: run.zero must be 0, 1 or 2");
  spec.activation_bytes = kv.number("run.activation_bytes", 4);
  spec.grad_bytes = kv.number("run.grad_bytes", 4);
  spec.param_bytes = kv.number("run.param_bytes", 4);
  spec.train_tokens = kv.text("run.train_tokens", "");
  L.dtype = DType::F32;  // message sizes are scaled by activation_bytes / 4
  if (auto split = kv.get("run.stage_layers")) {
    L.stages = parse_stage_layers(*split, c, L.pp);
  } else {
    // The profiled split when the pipeline depth matches, else the cost model's.
    if (prof && prof->layout.pp == L.pp && prof->layout.model.L == c.L)
      L.stages = prof->layout.stages;
    else
      L.stages = partition_layers(c, L.pp);
  }

  // Times.
  spec.message_bytes = kv.numbers("times.message_bytes");
  spec.other_s = kv.number("times.other_s", 0.0);
  if (kv.has("times.stage_forward")) {
    spec.source = TimeSource::Stages;
    spec.source_text = "per-stage times from the spec";
    spec.stage_forward_s = kv.numbers("times.stage_forward");
    spec.stage_backward_s = kv.numbers("times.stage_backward");
    spec.stage_optimizer_s = kv.numbers("times.stage_optimizer");
    spec.stage_other_s = kv.numbers("times.stage_other");
    spec.times_micro_batch = kv.integer("times.micro_batch", L.micro_batch);
  } else if (kv.has("times.layer_forward")) {
    spec.source = TimeSource::Layers;
    spec.source_text = "per-layer times from the spec";
    LayerTimes& t = spec.layer_times;
    t.micro_batch = kv.integer("times.micro_batch", L.micro_batch);
    std::vector<double> f = kv.numbers("times.layer_forward"), b = kv.numbers("times.layer_backward");
    if (f.size() == 1) f.assign(std::size_t(c.L), f[0]);
    if (b.size() == 1) b.assign(std::size_t(c.L), b[0]);
    if (b.empty()) {
      b = f;
      for (double& x : b) x *= 2;  // backward = 2 x forward in FLOPs
    }
    require(int(f.size()) == c.L && int(b.size()) == c.L, "projection: times.layer_forward and ",
            "times.layer_backward need one value or ", c.L, " (one per layer)");
    for (int l = 0; l < c.L; ++l) t.layers.push_back({f[std::size_t(l)], b[std::size_t(l)]});
    t.embed = {kv.number("times.embed_forward", 0), kv.number("times.embed_backward", 0)};
    t.head = {kv.number("times.head_forward", 0), kv.number("times.head_backward", 0)};
    spec.optimizer_s_per_param = kv.number("times.optimizer_seconds_per_param", -1);
    spec.times_micro_batch = t.micro_batch;
  } else if (prof) {
    const RunLayout& measured = prof->layout;
    // The profile must be of this model: its times say nothing about another.
    require(same_model(c, measured.model), "projection: ", prof_path, " profiles ",
            measured.model.describe(), ", not the target ", c.describe(),
            "; drop times.profile to derive times from FLOPs (cluster.peak_tflops, "
            "cluster.compute_efficiency)");
    if (same_stages(measured.stages, L.stages) && measured.micro_batch == L.micro_batch) {
      spec.source = TimeSource::Stages;
      spec.source_text = "measured per-stage times (" + prof_path + ")";
      for (const MeasuredStage& s : prof->stages) {
        spec.stage_forward_s.push_back(s.forward_s);
        spec.stage_backward_s.push_back(s.backward_s);
        // The measured optimizer time is per replica; under ZeRO >= 1 it
        // covered a 1/dp shard, so the whole stage takes dp times as long.
        spec.stage_optimizer_s.push_back(s.optimizer_s * (measured.zero >= 1 ? measured.dp : 1));
        // Data loading is inside the measured forward times already; only the
        // time outside every action comes on top.
        spec.stage_other_s.push_back(s.outside_s);
      }
      spec.times_micro_batch = measured.micro_batch;
    } else {
      spec.source = TimeSource::Layers;
      spec.source_text = "per-layer times derived from " + prof_path;
      spec.layer_times = prof->layer_times;
      spec.times_micro_batch = spec.layer_times.micro_batch;
      spec.optimizer_s_per_param = prof->optimizer_s_per_param;
      if (!kv.has("times.other_s")) {
        double sum = 0;
        for (const MeasuredStage& s : prof->stages) sum += s.outside_s;
        spec.other_s = sum / double(std::max<std::size_t>(prof->stages.size(), 1));
      }
    }
    const bool same_run = same_stages(measured.stages, L.stages) &&
                          measured.micro_batch == L.micro_batch && measured.dp == L.dp &&
                          measured.microbatches == L.microbatches && measured.zero == L.zero &&
                          measured.schedule == L.schedule;
    if (same_run) {
      ProjectionSpec::Measured mr;
      mr.step_s = prof->step_s;
      mr.bubble = prof->bubble;
      mr.tokens_per_s = prof->tokens_per_s;
      for (const MeasuredStage& s : prof->stages) mr.stage_bubble.push_back(s.bubble);
      spec.measured = mr;
    }
  } else {
    spec.source = TimeSource::Flops;
    require(spec.peak_flops > 0, "projection: no times given: set cluster.device or "
                                 "cluster.peak_tflops (times from FLOPs), times.profile, "
                                 "times.layer_forward or times.stage_forward");
    require(spec.efficiency > 0 && spec.efficiency <= 1,
            "projection: cluster.compute_efficiency must be in (0, 1]");
    char buf[160];
    std::snprintf(buf, sizeof buf, "the FLOP formula at %.0f%% of %.0f TFLOP/s per rank",
                  100 * spec.efficiency, spec.peak_flops / 1e12);
    spec.source_text = buf;
  }
  if (spec.source == TimeSource::Stages) {
    const std::size_t P = std::size_t(L.pp);
    require(spec.stage_forward_s.size() == P && spec.stage_backward_s.size() == P,
            "projection: times.stage_forward / times.stage_backward need ", P,
            " values (one per stage)");
    if (spec.stage_optimizer_s.empty()) spec.stage_optimizer_s.assign(P, 0.0);
    if (spec.stage_other_s.empty()) spec.stage_other_s.assign(P, spec.other_s);
    require(spec.stage_optimizer_s.size() == P && spec.stage_other_s.size() == P,
            "projection: times.stage_optimizer / times.stage_other need ", P, " values");
  }
  require(spec.source == TimeSource::Flops || spec.times_micro_batch > 0,
          "projection: times.micro_batch must be positive");
  require(spec.message_bytes.empty() || int(spec.message_bytes.size()) == L.pp - 1,
          "projection: times.message_bytes needs ", L.pp - 1, " values (one per boundary)");
  spec.ignored_keys = kv.unused();
  return spec;
}

}  // namespace

ProjectionSpec load_projection(const std::string& file, const std::vector<std::string>& assignments) {
  KeyValues kv;
  std::optional<MeasuredProfile> prof;
  const bool is_json = file.size() >= 5 && file.compare(file.size() - 5, 5, ".json") == 0;
  if (is_json) {
    prof = read_measured_profile(file);
    defaults_from_profile(*prof, file, kv);
  } else {
    kv.merge_ini(read_text_file(file), file);
  }
  for (const std::string& a : assignments) kv.merge_assignment(a);
  return build_spec(kv, prof, file);
}

ProjectionSpec projection_from_profile(const MeasuredProfile& profile,
                                       const std::vector<std::string>& assignments) {
  KeyValues kv;
  const std::string name = "(this run)";
  defaults_from_profile(profile, name, kv);
  for (const std::string& a : assignments) kv.merge_assignment(a);
  return build_spec(kv, profile, name);
}

SimInput simulator_input(const ProjectionSpec& spec) {
  const RunLayout& L = spec.layout;
  const ModelConfig& c = L.model;
  SimInput in;
  in.schedule = L.schedule;
  in.pp = L.pp;
  in.dp = L.dp;
  in.microbatches = L.microbatches;
  in.zero = L.zero;
  in.cluster = spec.cluster;
  const double scale =
      spec.times_micro_batch > 0 ? double(L.micro_batch) / spec.times_micro_batch : 1.0;
  const double tokens = double(L.micro_batch) * c.T;
  for (int s = 0; s < L.pp; ++s) {
    const StageSpec& sp = L.stages[std::size_t(s)];
    const double params = double(L.stage_params(s));
    SimStage st;
    switch (spec.source) {
      case TimeSource::Stages:
        st.forward_s = spec.stage_forward_s[std::size_t(s)] * scale;
        st.backward_s = spec.stage_backward_s[std::size_t(s)] * scale;
        st.optimizer_s = spec.stage_optimizer_s[std::size_t(s)];
        st.other_s = spec.stage_other_s[std::size_t(s)];
        break;
      case TimeSource::Layers: {
        const LayerTimes& t = spec.layer_times;
        for (int l = sp.first_layer; l < sp.end_layer; ++l) {
          st.forward_s += t.layers[std::size_t(l)].forward_s;
          st.backward_s += t.layers[std::size_t(l)].backward_s;
        }
        if (sp.embed) {
          st.forward_s += t.embed.forward_s;
          st.backward_s += t.embed.backward_s;
        }
        if (sp.head) {
          st.forward_s += t.head.forward_s;
          st.backward_s += t.head.backward_s;
        }
        st.forward_s *= scale;
        st.backward_s *= scale;
        st.optimizer_s = spec.optimizer_s_per_param >= 0
                             ? spec.optimizer_s_per_param * params
                             : (spec.memory_Bps > 0
                                    ? params * spec.optimizer_bytes_per_param / spec.memory_Bps
                                    : 0.0);
        st.other_s = spec.other_s;
        break;
      }
      case TimeSource::Flops: {
        const double fwd = L.stage_flops_per_token(s) / 3.0 * tokens;
        st.forward_s = fwd / (spec.peak_flops * spec.efficiency);
        st.backward_s = 2 * st.forward_s;
        st.optimizer_s = spec.memory_Bps > 0
                             ? params * spec.optimizer_bytes_per_param / spec.memory_Bps
                             : 0.0;
        st.other_s = spec.other_s;
        break;
      }
    }
    if (s + 1 < L.pp)
      st.message_bytes = spec.message_bytes.empty()
                             ? L.message_bytes(s) * spec.activation_bytes / 4.0
                             : spec.message_bytes[std::size_t(s)];
    st.grad_bytes = params * spec.grad_bytes;
    st.param_bytes = params * spec.param_bytes;
    st.embed_bytes = double(c.V) * c.d * spec.grad_bytes;
    in.stages.push_back(st);
  }
  return in;
}

Projection project(const ProjectionSpec& spec) {
  Projection p;
  p.spec = spec;
  p.input = simulator_input(spec);
  p.sim = simulate(p.input);
  std::vector<RankRecord> records = p.sim.records;
  for (RankRecord& r : records) r.peak_flops = spec.peak_flops;
  p.metrics = compute_metrics(spec.layout, records);
  if (!spec.train_tokens.empty()) {
    if (spec.train_tokens == "chinchilla") {
      p.budget_tokens = 20.0 * double(param_count(spec.layout.model));
    } else {
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(spec.train_tokens, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      require(used == spec.train_tokens.size() && v > 0, "projection: run.train_tokens = '",
              spec.train_tokens, "' is neither a positive number nor 'chinchilla'");
      p.budget_tokens = v;
    }
    p.time_to_train_s = p.budget_tokens / p.metrics.overall.tokens_per_s;
  }
  return p;
}

}  // namespace wiola::profile
