#include "wiola-profile/projection.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "model/flops.hpp"
#include "partition/partition.hpp"
#include "pipeline/schedule_check.hpp"
#include "profile/peak.hpp"
#include "train/memory_plan.hpp"
#include "wiola-profile/files.hpp"
#include "wiola-profile/model_fields.hpp"
#include "wiola-profile/spec_file.hpp"

namespace wiola::profile {

// ---- the spec ----------------------------------------------------------------

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Memory per device in bytes (datasheet: 80 GB, 141 GB): the schedule's memory check.
double device_memory_bytes(const std::string& device) {
  if (device == "h100" || device == "a100") return 80e9;
  if (device == "h200") return 141e9;
  return 0;
}

bool same_model(const ModelConfig& a, const ModelConfig& b) {
  return a.arch == b.arch && a.dff == b.dff && a.d == b.d && a.L == b.L && a.H == b.H &&
         a.Hkv == b.Hkv && a.dA == b.dA &&
         a.dB == b.dB && a.V == b.V && a.T == b.T && a.Lambda == b.Lambda && a.summary == b.summary;
}

bool same_stages(const std::vector<StageSpec>& a, const std::vector<StageSpec>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].first_layer != b[i].first_layer || a[i].end_layer != b[i].end_layer) return false;
  return true;
}

// [cluster]: the links, the peak and what FLOP-derived times assume.
// `profile_peak`: a peak_tflops given is the profile's measured one.
void read_cluster(const SpecValues& in, bool profile_peak, ProjectionSpec& spec) {
  Cluster& cl = spec.cluster;
  cl.ranks_per_node = in.integer("cluster.gpus_per_node", 8);
  spec.nodes = in.integer("cluster.nodes", 1);
  require(cl.ranks_per_node >= 1 && spec.nodes >= 1,
          "projection: cluster.gpus_per_node and cluster.nodes must be positive");
  cl.intra.latency_s = in.number("cluster.intra_latency_us", 0.0) * kSpecUs;
  cl.intra.bandwidth_Bps = in.number("cluster.intra_bandwidth_GBps", 0.0) * kSpecGB;
  cl.inter.latency_s =
      in.number("cluster.inter_latency_us", cl.intra.latency_s / kSpecUs) * kSpecUs;
  cl.inter.bandwidth_Bps =
      in.number("cluster.inter_bandwidth_GBps", cl.intra.bandwidth_Bps / kSpecGB) * kSpecGB;
  const std::string device = in.text("cluster.device", "");
  if (!device.empty()) {
    const auto t = device_peak_tflops(device);
    require(t.has_value(), "projection: cluster.device '", device, "' is unknown (", known_devices(),
            "); give cluster.peak_tflops instead");
    spec.peak_flops = *t * 1e12;
    spec.peak_source = device + " bf16 dense peak";
    spec.device_memory_bytes = device_memory_bytes(device);
  }
  spec.device_memory_bytes =
      in.number("cluster.device_memory_GiB", spec.device_memory_bytes / kGiB) * kGiB;
  if (in.has("cluster.peak_tflops")) {
    spec.peak_flops = in.number("cluster.peak_tflops", 0) * 1e12;
    spec.peak_source = profile_peak ? "the profile's measured peak" : "cluster.peak_tflops";
  }
  spec.efficiency = in.number("cluster.compute_efficiency", 0.5);
  spec.memory_Bps = in.number("cluster.memory_bandwidth_GBps", 0.0) * kSpecGB;
  spec.optimizer_bytes_per_param = in.number("cluster.optimizer_bytes_per_param", 32.0);
}

// [run]: the grid, the batch, the schedule and the partition (the profiled
// split when the pipeline depth matches, else the cost model's).
void read_run(const SpecValues& in, const MeasuredProfile* prof, ProjectionSpec& spec) {
  RunLayout& L = spec.layout;
  const ModelConfig& c = L.model;
  const int capacity = spec.cluster.ranks_per_node * spec.nodes;
  L.pp = in.integer("run.pp", 1);
  require(L.pp >= 1 && L.pp <= c.L, "projection: run.pp = ", L.pp, " must be in [1, ", c.L, "]");
  L.dp = in.integer("run.dp", capacity / L.pp);
  require(L.dp >= 1 && L.pp * L.dp <= capacity, "projection: pp ", L.pp, " x dp ", L.dp,
          " needs ", L.pp * L.dp, " ranks; the cluster has ", spec.nodes, " node(s) x ",
          spec.cluster.ranks_per_node, " = ", capacity);
  L.micro_batch = in.integer("run.micro_batch", 1);
  require(L.micro_batch >= 1, "projection: run.micro_batch must be positive");
  if (in.has("run.microbatches")) {
    L.microbatches = in.integer("run.microbatches", 1);
    L.global_batch = L.microbatches * L.micro_batch * L.dp;
    in.integer("run.global_batch", 0);  // superseded
  } else {
    L.global_batch = in.integer("run.global_batch", L.micro_batch * L.dp * L.pp);
    require(L.global_batch % (L.micro_batch * L.dp) == 0, "projection: run.global_batch ",
            L.global_batch, " is not a multiple of micro_batch x dp = ", L.micro_batch * L.dp);
    L.microbatches = L.global_batch / (L.micro_batch * L.dp);
  }
  require(L.microbatches >= 1, "projection: fewer than one micro-batch per replica");
  const std::string schedule = in.text("run.schedule", "best");
  spec.pick_schedule = schedule == "best";
  L.schedule = spec.pick_schedule ? pipeline::ScheduleKind::OneFOneB
                                  : pipeline::parse_schedule_kind(schedule);
  L.virtual_stages =
      in.integer("run.virtual_stages", L.schedule == pipeline::ScheduleKind::Interleaved ? 2 : 1);
  pipeline::check_schedule_shape(L.schedule, L.pp, L.microbatches, L.virtual_stages);
  const int nv = L.pp * L.virtual_stages;
  require(nv <= c.L, "projection: pp ", L.pp, " x ", L.virtual_stages, " chunks needs ", nv,
          " layers, the model has ", c.L);
  spec.recompute = in.integer("run.recompute", 0) != 0;
  L.zero = in.integer("run.zero", 0);
  require(L.zero >= 0 && L.zero <= 2, "projection: run.zero must be 0, 1 or 2");
  spec.activation_bytes = in.number("run.activation_bytes", 4);
  spec.grad_bytes = in.number("run.grad_bytes", 4);
  spec.param_bytes = in.number("run.param_bytes", 4);
  spec.train_tokens = in.text("run.train_tokens", "");
  spec.overlap_comm = in.integer("run.overlap_comm", 1) != 0;
  L.dtype = DType::F32;  // message sizes are scaled by activation_bytes / 4
  // One StageSpec per virtual stage (c * pp + s).
  spec.stages_given = in.has("run.stage_layers");
  if (spec.stages_given)
    L.stages = parse_stage_layers(in.text("run.stage_layers", ""), c, L.pp, L.virtual_stages);
  else if (prof && prof->layout.pp == L.pp && prof->layout.virtual_stages == L.virtual_stages &&
           prof->layout.model.L == c.L)
    L.stages = prof->layout.stages;
  else
    L.stages = partition_layers(c, nv);
}

// [times] given per stage or per layer; false when neither is.
bool read_given_times(const SpecValues& in, ProjectionSpec& spec) {
  const RunLayout& L = spec.layout;
  const int layers = L.model.L;
  if (in.has("times.stage_forward")) {
    spec.source = TimeSource::Stages;
    spec.source_text = "per-stage times from the spec";
    spec.stage_forward_s = in.numbers("times.stage_forward");
    spec.stage_backward_s = in.numbers("times.stage_backward");
    spec.stage_optimizer_s = in.numbers("times.stage_optimizer");
    spec.stage_other_s = in.numbers("times.stage_other");
    spec.times_micro_batch = in.integer("times.micro_batch", L.micro_batch);
    return true;
  }
  if (!in.has("times.layer_forward")) return false;
  spec.source = TimeSource::Layers;
  spec.source_text = "per-layer times from the spec";
  LayerTimes& t = spec.layer_times;
  t.micro_batch = in.integer("times.micro_batch", L.micro_batch);
  std::vector<double> f = in.numbers("times.layer_forward"), b = in.numbers("times.layer_backward");
  if (f.size() == 1) f.assign(std::size_t(layers), f[0]);
  if (b.size() == 1) b.assign(std::size_t(layers), b[0]);
  if (b.empty()) {
    b = f;
    for (double& x : b) x *= 2;  // backward = 2 x forward in FLOPs
  }
  require(int(f.size()) == layers && int(b.size()) == layers,
          "projection: times.layer_forward and times.layer_backward need one value or ", layers,
          " (one per layer)");
  for (int l = 0; l < layers; ++l) t.layers.push_back({f[std::size_t(l)], b[std::size_t(l)]});
  t.embed = {in.number("times.embed_forward", 0), in.number("times.embed_backward", 0)};
  t.head = {in.number("times.head_forward", 0), in.number("times.head_backward", 0)};
  spec.optimizer_s_per_param = in.number("times.optimizer_seconds_per_param", -1);
  spec.times_micro_batch = t.micro_batch;
  return true;
}

// [times] counts and [ceilings]: per-layer times from the counted work at the
// ceilings; false when no counts file is given.
bool read_counted_times(const SpecValues& in, ProjectionSpec& spec) {
  if (!in.has("times.counts")) return false;
  const RunLayout& L = spec.layout;
  Ceilings& c = spec.ceilings;
  const auto positive = [&](const char* key, double unit) {
    require(in.has(key), "projection: times.counts needs ", key,
            " (tools/gpu-check.sh measures the ceilings; docs/profiling.md)");
    const double v = in.number(key, 0);
    require(v > 0, "projection: ", key, " must be positive, got ", v);
    return v * unit;
  };
  c.gemm_flops_per_s = positive("ceilings.gemm_tflops", 1e12);
  c.attention_flops_per_s = positive("ceilings.attention_tflops", 1e12);
  c.memory_Bps = positive("ceilings.memory_GBps", kSpecGB);
  c.operation_s = in.number("ceilings.launch_us", 0) * kSpecUs;
  require(c.operation_s >= 0, "projection: ceilings.launch_us must not be negative");
  c.source = in.text("ceilings.source", "given in the spec");
  const std::string path = in.text("times.counts", "");
  spec.counted = read_counted_work(path, L.model, L.micro_batch, L.model.T);
  spec.source = TimeSource::Layers;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "per-layer times from counted work (%s: %s) at ceilings %s: GEMMs %.4g TFLOP/s, "
                "attention %.4g TFLOP/s, memory %.4g GB/s, %.3g us per device operation",
                path.c_str(), spec.counted->counted.c_str(), c.source.c_str(),
                c.gemm_flops_per_s / 1e12, c.attention_flops_per_s / 1e12, c.memory_Bps / 1e9,
                c.operation_s / kSpecUs);
  spec.source_text = buf;
  spec.layer_times = counted_layer_times(*spec.counted, L.model, c);
  spec.times_micro_batch = L.micro_batch;
  // The optimizer is memory-bound: priced at the measured bandwidth unless
  // the cluster gives one.
  if (spec.memory_Bps <= 0) spec.memory_Bps = c.memory_Bps;
  return true;
}

// Times from a profile of the same model: its per-stage times when the target
// has its partition and micro-batch size, else its per-layer times.
void times_from_profile(const SpecValues& in, const MeasuredProfile& prof,
                        const std::string& prof_path, ProjectionSpec& spec) {
  const RunLayout& L = spec.layout;
  const RunLayout& measured = prof.layout;
  // The profile must be of this model: its times say nothing about another.
  require(same_model(L.model, measured.model), "projection: ", prof_path, " profiles ",
          measured.model.describe(), ", not the target ", L.model.describe(),
          "; drop times.profile to derive times from FLOPs (cluster.peak_tflops, "
          "cluster.compute_efficiency)");
  // Per-stage times are per rank: reusable only without chunks.
  if (same_stages(measured.stages, L.stages) && measured.micro_batch == L.micro_batch &&
      measured.virtual_stages == 1 && L.virtual_stages == 1) {
    spec.source = TimeSource::Stages;
    spec.source_text = "measured per-stage times (" + prof_path + ")";
    for (const MeasuredStage& s : prof.stages) {
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
    spec.layer_times = prof.layer_times;
    spec.times_micro_batch = spec.layer_times.micro_batch;
    spec.optimizer_s_per_param = prof.optimizer_s_per_param;
    if (!in.has("times.other_s")) {
      double sum = 0;
      for (const MeasuredStage& s : prof.stages) sum += s.outside_s;
      spec.other_s = sum / double(std::max<std::size_t>(prof.stages.size(), 1));
    }
  }
  const bool same_run = same_stages(measured.stages, L.stages) &&
                        measured.micro_batch == L.micro_batch && measured.dp == L.dp &&
                        measured.microbatches == L.microbatches && measured.zero == L.zero &&
                        measured.schedule == L.schedule &&
                        measured.virtual_stages == L.virtual_stages;
  // A zero-bubble profile measured how much of the backward W is.
  double w = 0, b = 0;
  for (const MeasuredStage& s : prof.stages) {
    w += s.weight_s;
    b += s.backward_s;
  }
  if (w > 0 && b > 0 && !in.has("times.weight_share")) spec.weight_share = w / b;
  if (same_run) {
    ProjectionSpec::Measured mr;
    mr.step_s = prof.step_s;
    mr.bubble = prof.bubble;
    mr.tokens_per_s = prof.tokens_per_s;
    for (const MeasuredStage& s : prof.stages) mr.stage_bubble.push_back(s.bubble);
    spec.measured = mr;
  }
}

void times_from_flops(ProjectionSpec& spec) {
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

void check_times(ProjectionSpec& spec) {
  const int pp = spec.layout.pp, nv = spec.layout.num_virtual();
  if (spec.source == TimeSource::Stages) {
    const std::size_t P = std::size_t(pp);
    require(spec.stage_forward_s.size() == std::size_t(nv) &&
                spec.stage_backward_s.size() == std::size_t(nv),
            "projection: times.stage_forward / times.stage_backward need ", nv,
            " values (one per stage", nv > pp ? " and chunk, virtual stage c x pp + s" : "", ")");
    if (spec.stage_optimizer_s.empty()) spec.stage_optimizer_s.assign(P, 0.0);
    if (spec.stage_other_s.empty()) spec.stage_other_s.assign(P, spec.other_s);
    require(spec.stage_optimizer_s.size() == P && spec.stage_other_s.size() == P,
            "projection: times.stage_optimizer / times.stage_other need ", P, " values");
  }
  require(spec.source == TimeSource::Flops || spec.times_micro_batch > 0,
          "projection: times.micro_batch must be positive");
  require(spec.message_bytes.empty() || int(spec.message_bytes.size()) == nv - 1,
          "projection: times.message_bytes needs ", nv - 1, " values (one per boundary)");
  require(spec.weight_share < 0 || spec.weight_share <= 1,
          "projection: times.weight_share must be in [0, 1]");
}

// `preloaded` is the profile named `preloaded_name` when the caller has it
// already (the profile given to --project, or a run just made).
ProjectionSpec build_spec(const boost::program_options::variables_map& vm,
                          const std::optional<MeasuredProfile>& preloaded,
                          const std::string& preloaded_name) {
  const SpecValues in(vm);
  ProjectionSpec spec;
  spec.layout.model = model_from_spec(in);

  // The measured profile, when the times come from one.
  std::optional<MeasuredProfile> prof;
  const std::string prof_path = in.text("times.profile", "");
  if (!prof_path.empty())
    prof = preloaded && prof_path == preloaded_name ? *preloaded : read_measured_profile(prof_path);

  read_cluster(in, prof && preloaded, spec);
  read_run(in, prof ? &*prof : nullptr, spec);
  spec.message_bytes = in.numbers("times.message_bytes");
  spec.other_s = in.number("times.other_s", 0.0);
  spec.weight_share = in.number("times.weight_share", -1.0);
  if (!read_given_times(in, spec) && !read_counted_times(in, spec)) {
    if (prof)
      times_from_profile(in, *prof, prof_path, spec);
    else
      times_from_flops(spec);
  }
  check_times(spec);
  spec.ignored_keys = in.unused();
  return spec;
}

bool is_json_file(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
}

}  // namespace

ProjectionSpec load_projection(const std::string& file, const std::vector<std::string>& assignments) {
  if (is_json_file(file)) {
    const MeasuredProfile prof = read_measured_profile(file);
    return build_spec(spec_from_profile(prof, file, assignments), prof, file);
  }
  return build_spec(spec_from_ini(read_text_file(file), file, assignments), std::nullopt, file);
}

ProjectionSpec projection_from_profile(const MeasuredProfile& profile,
                                       const std::vector<std::string>& assignments) {
  const std::string name = "(this run)";
  return build_spec(spec_from_profile(profile, name, assignments), profile, name);
}

SimInput simulator_input(const ProjectionSpec& spec) {
  const RunLayout& L = spec.layout;
  const ModelConfig& c = L.model;
  SimInput in;
  in.schedule = L.schedule;
  in.pp = L.pp;
  in.dp = L.dp;
  in.microbatches = L.microbatches;
  in.chunks = L.virtual_stages;
  in.zero = L.zero;
  in.overlap_comm = spec.overlap_comm;
  in.cluster = spec.cluster;
  const double scale =
      spec.times_micro_batch > 0 ? double(L.micro_batch) / spec.times_micro_batch : 1.0;
  const double tokens = double(L.micro_batch) * c.T;
  const int nv = L.num_virtual();
  // Per virtual stage k (stage k % pp, chunk k / pp). Rank-level times (other,
  // and the given per-stage optimizer times) go on chunk 0; the simulator sums
  // a rank's chunks.
  for (int k = 0; k < nv; ++k) {
    const StageSpec& sp = L.stages[std::size_t(k)];
    const int s = k % L.pp;
    const bool first_chunk = k < L.pp;
    const double params = double(L.stage_params(k));
    SimStage st;
    st.buckets = std::max(1, sp.num_layers());
    switch (spec.source) {
      case TimeSource::Stages:
        st.forward_s = spec.stage_forward_s[std::size_t(k)] * scale;
        st.backward_s = spec.stage_backward_s[std::size_t(k)] * scale;
        st.optimizer_s = first_chunk ? spec.stage_optimizer_s[std::size_t(s)] : 0.0;
        st.other_s = first_chunk ? spec.stage_other_s[std::size_t(s)] : 0.0;
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
        st.other_s = first_chunk ? spec.other_s : 0.0;
        break;
      }
      case TimeSource::Flops: {
        const double fwd = L.stage_flops_per_token(k) / 3.0 * tokens;
        const double rate = spec.peak_flops * spec.efficiency;
        st.forward_s = fwd / rate;
        st.backward_s = 2 * st.forward_s;
        // A GPU's loss keeps no logits and makes the head's gradients in the
        // forward, from the same logits (Backend::head_loss_keeps_no_logits):
        // two of the head's three products move from backward to forward.
        if (sp.head) {
          const double head_s = head_forward_flops_per_token(c) * tokens / rate;
          st.forward_s += 2 * head_s;
          st.backward_s -= 2 * head_s;
        }
        st.optimizer_s = spec.memory_Bps > 0
                             ? params * spec.optimizer_bytes_per_param / spec.memory_Bps
                             : 0.0;
        st.other_s = first_chunk ? spec.other_s : 0.0;
        break;
      }
    }
    // W: the measured or given share, else the simulator's default.
    if (spec.weight_share >= 0) st.weight_s = spec.weight_share * st.backward_s;
    if (k + 1 < nv)
      st.message_bytes = spec.message_bytes.empty()
                             ? L.message_bytes(k) * spec.activation_bytes / 4.0
                             : spec.message_bytes[std::size_t(k)];
    st.grad_bytes = params * spec.grad_bytes;
    st.param_bytes = params * spec.param_bytes;
    st.embed_bytes = double(c.V) * c.d * spec.grad_bytes;
    in.stages.push_back(st);
  }
  return in;
}

std::vector<std::pair<pipeline::ScheduleKind, int>> candidate_schedules(int pp) {
  using pipeline::ScheduleKind;
  if (pp <= 1) return {{ScheduleKind::OneFOneB, 1}};
  return {{ScheduleKind::OneFOneB, 1},
          {ScheduleKind::Interleaved, 2},
          {ScheduleKind::ZbH1, 1},
          {ScheduleKind::ZbH2, 1}};
}

MemoryCheck projected_memory(const ProjectionSpec& spec) {
  const RunLayout& L = spec.layout;
  const int v = std::max(L.virtual_stages, 1);
  const pipeline::ScheduleCheck check = pipeline::check_schedules(
      pipeline::make_schedules(L.schedule, L.pp, L.microbatches, v), L.microbatches, v);
  require(check.ok(), "projection: the ", pipeline::schedule_kind_name(L.schedule),
          " schedule does not check out: ", check.message());
  MemoryCheck out;
  for (int s = 0; s < L.pp; ++s) {
    // The trainer's own estimate (train/memory_plan.hpp): the stage's chunks,
    // activations for the peak its schedule holds.
    MemoryPlanInput in;
    in.model = L.model;
    in.pp = L.pp;
    in.stage_index = s;
    in.dp = L.dp;
    in.zero = L.zero;
    in.dtype = spec.activation_bytes <= 2 ? DType::BF16 : DType::F32;
    in.micro_batch = L.micro_batch;
    in.microbatches = L.microbatches;
    in.schedule = L.schedule;
    in.recompute = spec.recompute;
    in.device = true;
    in.cuda_graphs = true;  // the trainer's default on a GPU
    in.chunks = L.rank_chunks(s);
    const MemoryEstimate e = estimate_memory(in);
    out.bytes = std::max(out.bytes, e.total());
    out.peak_in_flight = std::max(out.peak_in_flight, check.peak_in_flight[std::size_t(s)]);
  }
  return out;
}

namespace {

Projection project_one(const ProjectionSpec& spec) {
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
  p.memory = projected_memory(spec);
  return p;
}

// The spec with another schedule, or why it cannot run this layout.
std::optional<ProjectionSpec> with_schedule(const ProjectionSpec& spec, pipeline::ScheduleKind kind,
                                            int chunks, std::string& why) {
  ProjectionSpec s = spec;
  RunLayout& L = s.layout;
  try {
    pipeline::check_schedule_shape(kind, L.pp, L.microbatches, chunks);
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
  if (chunks != L.virtual_stages) {
    if (L.pp * chunks > L.model.L) {
      why = detail::concat(L.pp * chunks, " virtual stages for ", L.model.L, " layers");
      return std::nullopt;
    }
    if (spec.stages_given || spec.source == TimeSource::Stages || !spec.message_bytes.empty()) {
      why = "the spec fixes the partition or per-stage times for " +
            std::to_string(L.virtual_stages) + " chunk(s) per stage";
      return std::nullopt;
    }
    L.stages = partition_layers(L.model, L.pp * chunks);
  }
  // What a profile measured holds for its own schedule only.
  const bool same = kind == L.schedule && chunks == L.virtual_stages;
  L.schedule = kind;
  L.virtual_stages = chunks;
  s.pick_schedule = false;
  if (!same) s.measured = std::nullopt;
  return s;
}

}  // namespace

Projection project(const ProjectionSpec& spec) {
  if (!spec.pick_schedule) return project_one(spec);
  std::vector<ScheduleCandidate> cands;
  std::optional<Projection> best;
  std::size_t best_i = 0;
  for (const auto& [kind, chunks] : candidate_schedules(spec.layout.pp)) {
    ScheduleCandidate c;
    c.schedule = kind;
    c.chunks = chunks;
    const std::optional<ProjectionSpec> s = with_schedule(spec, kind, chunks, c.note);
    if (s) {
      Projection p = project_one(*s);
      c.ran = true;
      c.step_s = p.metrics.overall.step_s;
      c.bubble = p.metrics.overall.bubble;
      c.tokens_per_s = p.metrics.overall.tokens_per_s;
      c.peak_in_flight = p.memory.peak_in_flight;
      c.memory_bytes = p.memory.bytes;
      c.fits = spec.device_memory_bytes <= 0 || p.memory.bytes <= 0.95 * spec.device_memory_bytes;
      // The fastest that fits; ties keep the earlier (simpler) schedule.
      const bool better = !best || (c.fits && !cands[best_i].fits) ||
                          (c.fits == cands[best_i].fits && c.step_s < cands[best_i].step_s * (1 - 1e-9));
      if (better) {
        best = std::move(p);
        best_i = cands.size();
      }
    }
    cands.push_back(c);
  }
  require(best.has_value(), "projection: no candidate schedule can run this layout");
  Projection p = std::move(*best);
  const ScheduleCandidate& w = cands[best_i];
  int fitting = 0, ran = 0;
  for (const ScheduleCandidate& c : cands) {
    ran += c.ran;
    fitting += c.ran && c.fits;
  }
  if (spec.layout.pp <= 1)
    p.choice = "pp 1: no pipeline, every schedule runs the same step";
  else if (!w.fits)
    p.choice = detail::concat("no candidate fits ", spec.device_memory_bytes / kGiB,
                              " GiB per rank; the fastest is shown");
  else
    p.choice = detail::concat("the fastest simulated step of the ", fitting, " of ", ran,
                              " candidates that fit",
                              spec.device_memory_bytes > 0 ? " in memory" : " (memory unchecked)");
  p.candidates = std::move(cands);
  p.spec.pick_schedule = true;
  return p;
}

}  // namespace wiola::profile
