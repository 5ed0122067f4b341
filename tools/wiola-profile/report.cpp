#include "wiola-profile/report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "model/flops.hpp"
#include "wiola-profile/model_fields.hpp"

namespace wiola::profile {

namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// The shortest text that reads back as the same double; empty when not finite.
std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// Appends ",<number>" (or just "," when !present).
void add_field(std::string& out, double v, bool present = true) {
  out += ',';
  if (present) out += csv_number(v);
}

std::string percent(double f) { return fmt("%.1f%%", 100 * f); }

// The closed form pipeline::theoretical_bubble uses for the schedule.
const char* bubble_formula(pipeline::ScheduleKind k) {
  switch (k) {
    case pipeline::ScheduleKind::Interleaved: return "(P-1)/(vm+P-1)";
    case pipeline::ScheduleKind::ZbH1:
    case pipeline::ScheduleKind::ZbH2: return "(P-1)/(3m+P-1)";
    default: return "(P-1)/(m+P-1)";
  }
}

std::string stage_label(const StageSpec& sp, int stage) {
  return fmt("stage %d [%d,%d)", stage, sp.first_layer, sp.end_layer);
}

// A stage (rank) with all its chunks' layers: "stage 0 [0,2)+[4,6)".
std::string rank_label(const RunLayout& l, int stage) {
  if (l.virtual_stages <= 1) return stage_label(l.stages.at(std::size_t(stage)), stage);
  return fmt("stage %d %s", stage, l.rank_layers(stage).c_str());
}

// One virtual stage of the projection's cost table ("stage 1.2 [..)": stage 1, chunk 2).
std::string virtual_label(const RunLayout& l, int k) {
  if (l.virtual_stages <= 1) return stage_label(l.stages.at(std::size_t(k)), k);
  const StageSpec& sp = l.stages.at(std::size_t(k));
  return fmt("stage %d.%d [%d,%d)", k % l.pp, k / l.pp, sp.first_layer, sp.end_layer);
}

// Milliseconds, with rounding noise around zero shown as 0.
double ms(double s) { return std::fabs(s) < 5e-9 ? 0.0 : s * 1e3; }

// "22.47 G", "5.178 P": FLOP/s with an SI prefix, 4 significant digits.
std::string si(double v) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 6) {
    v /= 1000;
    ++i;
  }
  return fmt("%.4g %s", v, prefixes[i]);
}

std::string split_row(const std::string& label, int ranks, const TimeSplit& t, double theory,
                      double tokens_per_s, double flops_per_s, double mfu, double compute_mfu,
                      double rss, bool with_memory) {
  std::string row = fmt("%-20s %5d %9.2f %8.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7s %7s",
                        label.c_str(), ranks, ms(t.step), ms(t.compute), ms(t.wait),
                        ms(t.drain), ms(t.comm), ms(t.reduce), ms(t.optimizer), ms(t.other),
                        percent(t.bubble()).c_str(), percent(theory).c_str());
  row += fmt(" %11.0f %9s %6s %6s", tokens_per_s, si(flops_per_s).c_str(), percent(mfu).c_str(),
             percent(compute_mfu).c_str());
  if (with_memory) row += fmt(" %8.1f", rss / (1024.0 * 1024.0));
  row += "\n";
  return row;
}

Json split_json(const TimeSplit& t) {
  return {{"step_s", t.step},       {"compute_s", t.compute}, {"wait_s", t.wait},
          {"drain_s", t.drain},     {"comm_s", t.comm},       {"reduce_s", t.reduce},
          {"optimizer_s", t.optimizer}, {"other_s", t.other}, {"bubble", t.bubble()}};
}

const char* kCsvSplit = "step_s,compute_s,wait_s,drain_s,comm_s,reduce_s,optimizer_s,other_s,bubble";

std::string csv_split(const TimeSplit& t) {
  std::string s;
  for (double v : {t.step, t.compute, t.wait, t.drain, t.comm, t.reduce, t.optimizer, t.other,
                   t.bubble()}) {
    s += csv_number(v);
    s += ',';
  }
  s.pop_back();
  return s;
}

Json layout_json(const RunLayout& l) {
  Json split = Json::array(), stages = Json::array();
  for (const StageSpec& s : l.stages) {
    split.push_back(s.num_layers());
    stages.push_back({{"first_layer", s.first_layer},
                      {"end_layer", s.end_layer},
                      {"embed", s.embed},
                      {"head", s.head}});
  }
  return {{"pp", l.pp},
          {"dp", l.dp},
          {"world", l.world()},
          {"schedule", pipeline::schedule_kind_name(l.schedule)},
          {"virtual_stages", l.virtual_stages},
          {"zero", l.zero},
          {"micro_batch", l.micro_batch},
          {"microbatches", l.microbatches},
          {"global_batch", l.global_batch},
          {"tokens_per_step", l.tokens_per_step()},
          {"threads", l.threads},
          {"dtype", dtype_name(l.dtype)},
          {"dtype_bytes", dtype_size(l.dtype)},
          {"stage_layers", std::move(split)},
          {"stages", std::move(stages)}};
}

Json stages_json(const RunLayout& l, const Metrics& m) {
  Json out = Json::array();
  for (const StageMetrics& s : m.stages) {
    Json j = split_json(s.t);
    j["stage"] = s.stage;
    j["first_layer"] = s.spec.first_layer;
    j["end_layer"] = s.spec.end_layer;
    j["replicas"] = s.replicas;
    if (l.virtual_stages > 1) j["layers"] = l.rank_layers(s.stage);
    j["params"] = l.rank_params(s.stage);
    j["train_flops_per_token"] = s.train_flops_per_token;
    j["tokens_per_s"] = s.tokens_per_s;
    j["flops_per_s"] = s.flops_per_s;
    j["peak_flops"] = s.peak_flops;
    j["mfu"] = s.mfu;
    j["compute_mfu"] = s.compute_mfu;
    j["peak_rss_bytes"] = s.peak_rss_bytes;
    j["forward_s"] = s.forward_s;
    j["backward_s"] = s.backward_s;
    if (s.weight_s > 0) j["weight_s"] = s.weight_s;
    j["outside_actions_s"] = s.outside_s;
    j["message_bytes"] = s.message_bytes;
    out.push_back(std::move(j));
  }
  return out;
}

Json overall_json(const OverallMetrics& o) {
  return {{"step_s", o.step_s},
          {"tokens_per_s", o.tokens_per_s},
          {"flops_per_s", o.flops_per_s},
          {"peak_flops", o.peak_flops},
          {"mfu", o.mfu},
          {"compute_mfu", o.compute_mfu},
          {"bubble", o.bubble},
          {"bubble_theory", o.bubble_theory},
          {"peak_rss_bytes", o.peak_rss_bytes},
          {"split", split_json(o.t)},
          {"step_times_s", o.step_times}};
}

std::string table_header(bool with_memory) {
  std::string h = fmt("%-20s %5s %9s %8s %7s %7s %7s %7s %7s %7s %7s %7s %11s %9s %6s %6s",
                      "ms per step", "ranks", "step", "compute", "wait", "drain", "comm",
                      "reduce", "optim", "other", "bubble", "theory", "tokens/s", "FLOP/s",
                      "MFU", "cMFU");
  if (with_memory) h += fmt(" %8s", "RSS MiB");
  h += "\n";
  return h;
}

}  // namespace

std::string human_duration(double s) {
  if (!(s >= 0)) return "-";
  if (s < 1) return fmt("%.0f ms", s * 1e3);
  if (s < 120) return fmt("%.1f s", s);
  if (s < 7200) return fmt("%.1f min", s / 60);
  if (s < 3 * 86400) return fmt("%.1f h", s / 3600);
  return fmt("%.1f days", s / 86400);
}

std::string human_bytes(double b) {
  if (b < 1024) return fmt("%.0f B", b);
  if (b < 1024.0 * 1024) return fmt("%.1f KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return fmt("%.1f MiB", b / (1024.0 * 1024));
  return fmt("%.2f GiB", b / (1024.0 * 1024 * 1024));
}

std::string format_split_table(const RunLayout& layout, const Metrics& m, bool with_memory) {
  std::string out = table_header(with_memory);
  const double theory = m.overall.bubble_theory;
  for (const StageMetrics& s : m.stages)
    out += split_row(rank_label(layout, s.stage), s.replicas, s.t, theory, s.tokens_per_s,
                     s.flops_per_s, s.mfu, s.compute_mfu, s.peak_rss_bytes, with_memory);
  const OverallMetrics& o = m.overall;
  out += split_row("all (rank mean)", layout.world(), o.t, theory, o.tokens_per_s, o.flops_per_s,
                   o.mfu, o.compute_mfu, o.peak_rss_bytes, with_memory);
  return out;
}

std::string format_profile(const ProfileResult& r, double budget_tokens,
                           const std::string& budget_name) {
  const RunLayout& l = r.layout;
  const Metrics& m = r.metrics;
  std::string out = "wiola-profile: ";
  out += l.model.describe();
  out += "\n";
  out += fmt("  %lld parameters (exact), %.4g training FLOP/token (docs/models.md)\n",
             static_cast<long long>(param_count(l.model)), training_flops_per_token(l.model));
  out += "  layout: ";
  out += l.describe();
  out += fmt(" (%lld tokens/step)\n", static_cast<long long>(l.tokens_per_step()));
  std::vector<double> st = m.overall.step_times;
  std::sort(st.begin(), st.end());
  out += fmt("  %d warm-up + %d measured steps; step time min %.2f / median %.2f / max %.2f ms\n",
             r.warmup_steps, r.measured_steps, st.empty() ? 0 : st.front() * 1e3,
             st.empty() ? 0 : st[st.size() / 2] * 1e3, st.empty() ? 0 : st.back() * 1e3);
  out += fmt("  peak %.2f GFLOP/s per rank on rank 0 (%s), %.2f GFLOP/s over all ranks\n",
             r.peak.per_rank / 1e9, r.peak.source.c_str(), m.overall.peak_flops / 1e9);
  if (r.link.measured)
    out += fmt("  link rank 0 <-> rank 1: latency %.2f us, bandwidth %.2f GB/s (%s messages)\n",
               r.link.latency_s * 1e6, r.link.bandwidth_Bps / 1e9,
               human_bytes(double(r.link.bytes)).c_str());
  out += "\n";
  out += format_split_table(l, m, true);
  out += "\n";
  out += fmt("  throughput %.0f tokens/s, %.3f GFLOP/s, MFU %s; bubble %s measured vs %s theory "
             "(%s, %s)\n",
             m.overall.tokens_per_s, m.overall.flops_per_s / 1e9, percent(m.overall.mfu).c_str(),
             percent(m.overall.bubble).c_str(), percent(m.overall.bubble_theory).c_str(),
             bubble_formula(l.schedule), std::string(pipeline::schedule_kind_name(l.schedule)).c_str());
  out += "  bubble = (wait + drain) / step; MFU = model FLOP/s / peak; cMFU = the same FLOPs over "
         "compute time only\n";
  out += "  RSS MiB = peak resident set size per rank during the run (getrusage ru_maxrss";
  out += r.rss_reset ? ", reset at the run's start" : ", since process start";
  out += "): host memory, not device memory\n";
  if (budget_tokens > 0)
    out += fmt("  time to train %.4g tokens (%s) at this rate: %s\n", budget_tokens,
               budget_name.c_str(), human_duration(budget_tokens / m.overall.tokens_per_s).c_str());
  return out;
}

std::string profile_csv(const ProfileResult& r) {
  const RunLayout& l = r.layout;
  const Metrics& m = r.metrics;
  std::string out = "scope,rank,stage,dp_index,first_layer,end_layer,ranks,";
  out += kCsvSplit;
  out += ",bubble_theory,tokens_per_s,flops_per_s,peak_flops,mfu,compute_mfu,peak_rss_bytes,"
         "forward_s,backward_s,preset,pp,dp,micro_batch,microbatches,global_batch,zero,schedule\n";
  const std::string tail = fmt(",%s,%d,%d,%d,%d,%d,%d,%s\n", l.model.preset.c_str(), l.pp, l.dp,
                               l.micro_batch, l.microbatches, l.global_batch, l.zero,
                               std::string(pipeline::schedule_kind_name(l.schedule)).c_str());
  for (const RankMetrics& k : m.ranks) {
    const StageSpec& sp = l.stages[std::size_t(k.stage)];
    out += fmt("rank,%d,%d,%d,%d,%d,1,", k.rank, k.stage, k.dp_index, sp.first_layer,
               sp.end_layer);
    out += csv_split(k.t);
    for (double v : {m.overall.bubble_theory, double(l.tokens_per_step()) / k.t.step,
                     k.flops_per_s, k.peak_flops, k.mfu, k.compute_mfu, k.peak_rss_bytes,
                     k.forward_s, k.backward_s})
      add_field(out, v);
    out += tail;
  }
  for (const StageMetrics& s : m.stages) {
    out += fmt("stage,,%d,,%d,%d,%d,", s.stage, s.spec.first_layer, s.spec.end_layer, s.replicas);
    out += csv_split(s.t);
    for (double v : {m.overall.bubble_theory, s.tokens_per_s, s.flops_per_s, s.peak_flops, s.mfu,
                     s.compute_mfu, s.peak_rss_bytes, s.forward_s, s.backward_s})
      add_field(out, v);
    out += tail;
  }
  const OverallMetrics& o = m.overall;
  out += fmt("all,,,,0,%d,%d,", l.model.L, l.world());
  out += csv_split(o.t);
  for (double v : {o.bubble_theory, o.tokens_per_s, o.flops_per_s, o.peak_flops, o.mfu,
                   o.compute_mfu})
    add_field(out, v);
  out += ",";
  out += csv_number(o.peak_rss_bytes);
  out += ",,";
  out += tail;
  return out;
}

Json profile_json(const ProfileResult& r) {
  const RunLayout& l = r.layout;
  const Metrics& m = r.metrics;
  Json ranks = Json::array(), peaks = Json::array();
  double peak_sum = 0;
  for (const RankMetrics& k : m.ranks) {
    Json j = split_json(k.t);
    j["rank"] = k.rank;
    j["stage"] = k.stage;
    j["dp_index"] = k.dp_index;
    j["flops_per_s"] = k.flops_per_s;
    j["peak_flops"] = k.peak_flops;
    j["mfu"] = k.mfu;
    j["compute_mfu"] = k.compute_mfu;
    j["peak_rss_bytes"] = k.peak_rss_bytes;
    j["forward_s"] = k.forward_s;
    j["backward_s"] = k.backward_s;
    j["outside_actions_s"] = k.outside_s;
    ranks.push_back(std::move(j));
    peaks.push_back(k.peak_flops);
    peak_sum += k.peak_flops;
  }
  const double mean_peak = m.ranks.empty() ? 0.0 : peak_sum / double(m.ranks.size());
  return {{"tool", "wiola-profile"},
          {"format", 1},
          {"model", model_to_json(l.model)},
          {"layout", layout_json(l)},
          {"steps", {{"warmup", r.warmup_steps}, {"measured", r.measured_steps}}},
          {"peak",
           {{"source", r.peak.source},
            {"mean_per_rank_flops", mean_peak},
            {"per_rank_flops", std::move(peaks)}}},
          {"link",
           {{"measured", r.link.measured},
            {"latency_s", r.link.latency_s},
            {"bandwidth_Bps", r.link.bandwidth_Bps},
            {"bytes", r.link.bytes}}},
          {"memory",
           {{"what", "peak resident set size (getrusage ru_maxrss), host memory"},
            {"reset_at_run_start", r.rss_reset}}},
          {"overall", overall_json(m.overall)},
          {"stages", stages_json(l, m)},
          {"ranks", std::move(ranks)},
          {"layer_times", layer_times_json(derive_layer_times(l, m.stages))},
          {"optimizer_seconds_per_param", optimizer_seconds_per_param(l, m)}};
}

namespace {
void sort_rows(std::vector<SweepRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const SweepRow& a, const SweepRow& b) {
    if (a.ok != b.ok) return a.ok;
    return a.tokens_per_s > b.tokens_per_s;
  });
}
}  // namespace

std::string format_sweep(std::vector<SweepRow> rows) {
  sort_rows(rows);
  std::string out = fmt("%4s %3s %3s %4s %4s %4s %6s %10s %11s %6s %7s %7s %10s %9s %8s\n", "#",
                        "pp", "dp", "mb", "m", "zero", "sched", "step ms", "tokens/s", "MFU",
                        "bubble", "theory", "sim ms", "sim bub", "RSS MiB");
  int i = 0;
  for (const SweepRow& r : rows) {
    const SweepPoint& p = r.point;
    out += fmt("%4d %3d %3d %4d %4d %4d %6s ", ++i, p.pp, p.dp, p.micro_batch, p.microbatches,
               p.zero, p.schedule.c_str());
    if (!r.ok) {
      out += "refused: ";
      out += r.error;
      out += "\n";
      continue;
    }
    out += fmt("%10.2f %11.0f %6s %7s %7s %10.2f %9s %8.1f\n", r.step_s * 1e3, r.tokens_per_s,
               percent(r.mfu).c_str(), percent(r.bubble).c_str(),
               percent(r.bubble_theory).c_str(), r.predicted_step_s * 1e3,
               percent(r.predicted_bubble).c_str(), r.peak_rss_bytes / (1024.0 * 1024.0));
  }
  return out;
}

std::string sweep_csv(std::vector<SweepRow> rows) {
  sort_rows(rows);
  std::string out =
      "pp,dp,micro_batch,microbatches,global_batch,zero,schedule,ok,step_s,tokens_per_s,mfu,"
      "bubble,bubble_theory,predicted_step_s,predicted_bubble,peak_rss_bytes,error\n";
  for (const SweepRow& r : rows) {
    const SweepPoint& p = r.point;
    out += fmt("%d,%d,%d,%d,%d,%d,%s,%d", p.pp, p.dp, p.micro_batch, p.microbatches,
               p.global_batch, p.zero, p.schedule.c_str(), r.ok ? 1 : 0);
    for (double v : {r.step_s, r.tokens_per_s, r.mfu, r.bubble, r.bubble_theory,
                     r.predicted_step_s, r.predicted_bubble, r.peak_rss_bytes})
      add_field(out, v, r.ok);
    std::string err = r.error;
    std::replace(err.begin(), err.end(), '"', '\'');
    out += ",\"";
    out += err;
    out += "\"\n";
  }
  return out;
}

namespace {

// Each counted part's work in one micro-batch of the target and its time at
// the ceilings, by kind (projection from counts).
std::string format_counted_work(const CountedWork& w, const Ceilings& c) {
  std::string out = fmt("\n  counted work per micro-batch of %d x %d tokens, and its time:\n",
                        w.micro_batch, w.seq);
  out += fmt("  %-20s %10s %10s %10s %7s | %9s %9s %9s %9s %9s\n", "part", "GEMM GF",
             "attn GF", "other MB", "ops", "GEMM us", "attn us", "memory us", "ops us",
             "total us");
  const auto row = [&](const char* name, const Work& work) {
    const WorkTime t = time_of(work, c);
    out += fmt("  %-20s %10.2f %10.2f %10.1f %7.0f | %9.1f %9.1f %9.1f %9.1f %9.1f\n", name,
               work.gemm_flops / 1e9, work.attention_flops / 1e9, work.bytes / 1e6,
               work.operations, t.gemm_s * 1e6, t.attention_s * 1e6, t.memory_s * 1e6,
               t.operations_s * 1e6, t.total() * 1e6);
  };
  const std::pair<const char*, const CountedPart*> parts[] = {
      {"ATM layer", &w.atm_layer}, {"plain layer", &w.plain_layer},
      {"head", &w.head}, {"embedding", &w.embedding}};
  for (const auto& [name, part] : parts) {
    row(fmt("%s fwd", name).c_str(), part->forward);
    row(fmt("%s bwd", name).c_str(), part->backward);
  }
  return out;
}

Json work_json(const Work& work, const Ceilings& c) {
  const WorkTime t = time_of(work, c);
  return {{"gemm_flops", work.gemm_flops},  {"attention_flops", work.attention_flops},
          {"bytes", work.bytes},            {"operations", work.operations},
          {"gemm_s", t.gemm_s},             {"attention_s", t.attention_s},
          {"memory_s", t.memory_s},         {"operations_s", t.operations_s}};
}

Json counted_work_json(const CountedWork& w, const Ceilings& c) {
  Json parts = Json::object();
  const std::pair<const char*, const CountedPart*> named[] = {
      {"atm_layer", &w.atm_layer}, {"plain_layer", &w.plain_layer},
      {"head", &w.head}, {"embedding", &w.embedding}};
  for (const auto& [name, part] : named)
    parts[name] = {{"forward", work_json(part->forward, c)},
                   {"backward", work_json(part->backward, c)}};
  return {{"file", w.file},
          {"counted", w.counted},
          {"micro_batch", w.micro_batch},
          {"ceilings",
           {{"gemm_flops_per_s", c.gemm_flops_per_s},
            {"attention_flops_per_s", c.attention_flops_per_s},
            {"memory_Bps", c.memory_Bps},
            {"operation_s", c.operation_s},
            {"source", c.source}}},
          {"parts", std::move(parts)}};
}

}  // namespace

std::string format_projection(const Projection& p) {
  const ProjectionSpec& s = p.spec;
  const RunLayout& l = s.layout;
  std::string out = "wiola-profile --project: ";
  out += l.model.describe();
  out += "\n";
  out += fmt("  %lld parameters (exact), %.4g training FLOP/token\n",
             static_cast<long long>(param_count(l.model)), training_flops_per_token(l.model));
  out += fmt("  cluster: %d node(s) x %d ranks; intra-node %.2f us + %.2f GB/s, inter-node %.2f "
             "us + %.2f GB/s (0 GB/s = unlimited)\n",
             s.nodes, s.cluster.ranks_per_node, s.cluster.intra.latency_s * 1e6,
             s.cluster.intra.bandwidth_Bps / 1e9, s.cluster.inter.latency_s * 1e6,
             s.cluster.inter.bandwidth_Bps / 1e9);
  out += "  layout: ";
  out += l.describe();
  out += fmt(" (%lld tokens/step)\n", static_cast<long long>(l.tokens_per_step()));
  out += "  compute times: ";
  out += s.source_text;
  out += "\n";
  if (s.peak_flops > 0)
    out += fmt("  peak %.4g TFLOP/s per rank (%s)\n", s.peak_flops / 1e12, s.peak_source.c_str());
  if (s.counted) out += format_counted_work(*s.counted, s.ceilings);
  out += "\n";
  out += fmt("  %-20s %12s %12s %12s %12s %13s %13s\n", "per stage", "fwd ms/mb", "bwd ms/mb",
             "message", "params", "optimizer ms", "grad reduce");
  for (int st = 0; st < int(p.input.stages.size()); ++st) {
    const SimStage& c = p.input.stages[std::size_t(st)];
    const double reduce_bytes = c.grad_bytes;
    out += fmt("  %-20s %12.4f %12.4f %12s %12lld %13.4f %13s\n",
               virtual_label(l, st).c_str(), c.forward_s * 1e3,
               c.backward_s * 1e3, human_bytes(c.message_bytes).c_str(),
               static_cast<long long>(l.stage_params(st)),
               c.optimizer_s / (l.zero >= 1 ? l.dp : 1) * 1e3, human_bytes(reduce_bytes).c_str());
  }
  if (!p.candidates.empty()) {
    out += "\n  schedules simulated (run.schedule = best):\n";
    out += fmt("  %-16s %12s %9s %12s %10s %12s\n", "schedule", "step ms", "bubble", "tokens/s",
               "in flight", "memory GiB");
    for (const ScheduleCandidate& c : p.candidates) {
      std::string name(pipeline::schedule_kind_name(c.schedule));
      if (c.chunks > 1) name += fmt(" v=%d", c.chunks);
      if (!c.ran) {
        out += fmt("  %-16s not run: %s\n", name.c_str(), c.note.c_str());
        continue;
      }
      const bool chosen = c.schedule == l.schedule && c.chunks == l.virtual_stages;
      out += fmt("  %-16s %12.4g %9s %12.0f %10d %12.2f%s%s\n", name.c_str(), c.step_s * 1e3,
                 percent(c.bubble).c_str(), c.tokens_per_s, c.peak_in_flight,
                 c.memory_bytes / (1024.0 * 1024 * 1024), c.fits ? "" : "  does not fit",
                 chosen ? "  <- chosen" : "");
    }
    out += "  chosen: ";
    out += pipeline::schedule_kind_name(l.schedule);
    if (l.virtual_stages > 1) out += fmt(" (%d chunks per stage)", l.virtual_stages);
    out += ", " + p.choice + "\n";
    if (s.device_memory_bytes > 0)
      out += fmt("  memory: estimate of the largest rank (train/memory_plan.hpp per chunk, the "
                 "schedule's peak in-flight micro-batches x chunks) against 95%% of %.1f GiB\n",
                 s.device_memory_bytes / (1024.0 * 1024 * 1024));
  }
  out += "\n  predicted step:\n";
  out += format_split_table(l, p.metrics, false);
  const OverallMetrics& o = p.metrics.overall;
  out += fmt("\n  predicted: step %.4g ms, %.0f tokens/s, bubble %s (theory %s)", o.step_s * 1e3,
             o.tokens_per_s, percent(o.bubble).c_str(), percent(o.bubble_theory).c_str());
  if (s.peak_flops > 0) out += fmt(", MFU %s", percent(o.mfu).c_str());
  out += "\n";
  if (s.measured)
    out += fmt("  measured (the profile of this layout): step %.4g ms, %.0f tokens/s, bubble %s; "
               "prediction error %+.1f%% step, %+.1f points bubble\n",
               s.measured->step_s * 1e3, s.measured->tokens_per_s,
               percent(s.measured->bubble).c_str(),
               100 * (o.step_s / s.measured->step_s - 1), 100 * (o.bubble - s.measured->bubble));
  if (p.budget_tokens > 0) {
    const double steps = p.budget_tokens / double(l.tokens_per_step());
    out += fmt("  time to train %.4g tokens (%s): %.0f steps, %s\n", p.budget_tokens,
               s.train_tokens.c_str(), std::ceil(steps), human_duration(p.time_to_train_s).c_str());
  }
  if (!s.ignored_keys.empty()) {
    out += "  WARNING: keys nobody read (superseded, or for another source of times):";
    for (const std::string& k : s.ignored_keys) {
      out += ' ';
      out += k;
    }
    out += "\n";
  }
  return out;
}

Json projection_json(const Projection& p) {
  const ProjectionSpec& s = p.spec;
  Json costs = Json::array();
  for (const SimStage& c : p.input.stages)
    costs.push_back({{"forward_s", c.forward_s},
                     {"backward_s", c.backward_s},
                     {"weight_s", weight_seconds(c)},
                     {"message_bytes", c.message_bytes},
                     {"grad_bytes", c.grad_bytes},
                     {"param_bytes", c.param_bytes},
                     {"embed_bytes", c.embed_bytes},
                     {"optimizer_s", c.optimizer_s},
                     {"other_s", c.other_s}});
  Json doc = {{"tool", "wiola-profile --project"},
              {"format", 1},
              {"model", model_to_json(s.layout.model)},
              {"layout", layout_json(s.layout)},
              {"cluster",
               {{"nodes", s.nodes},
                {"ranks_per_node", s.cluster.ranks_per_node},
                {"intra_latency_s", s.cluster.intra.latency_s},
                {"intra_bandwidth_Bps", s.cluster.intra.bandwidth_Bps},
                {"inter_latency_s", s.cluster.inter.latency_s},
                {"inter_bandwidth_Bps", s.cluster.inter.bandwidth_Bps},
                {"peak_flops_per_rank", s.peak_flops}}},
              {"compute_times", s.source_text},
              {"counted_work", s.counted ? counted_work_json(*s.counted, s.ceilings) : Json()},
              {"stage_costs", std::move(costs)},
              {"predicted", overall_json(p.metrics.overall)},
              {"stages", stages_json(s.layout, p.metrics)}};
  if (s.measured)
    doc["measured"] = {{"step_s", s.measured->step_s},
                       {"bubble", s.measured->bubble},
                       {"tokens_per_s", s.measured->tokens_per_s}};
  if (!p.candidates.empty()) {
    Json cands = Json::array();
    for (const ScheduleCandidate& c : p.candidates) {
      Json j = {{"schedule", pipeline::schedule_kind_name(c.schedule)},
                {"virtual_stages", c.chunks},
                {"ran", c.ran}};
      if (c.ran) {
        j["step_s"] = c.step_s;
        j["bubble"] = c.bubble;
        j["tokens_per_s"] = c.tokens_per_s;
        j["peak_in_flight"] = c.peak_in_flight;
        j["memory_bytes"] = c.memory_bytes;
        j["fits"] = c.fits;
      } else {
        j["why_not"] = c.note;
      }
      cands.push_back(std::move(j));
    }
    doc["schedules"] = {{"candidates", std::move(cands)}, {"choice", p.choice}};
  }
  if (p.budget_tokens > 0)
    doc["budget"] = {{"tokens", p.budget_tokens},
                     {"what", s.train_tokens},
                     {"time_to_train_s", p.time_to_train_s}};
  return doc;
}

}  // namespace wiola::profile
