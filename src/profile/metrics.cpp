#include "profile/metrics.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "model/flops.hpp"

namespace wiola::profile {

namespace {


struct Interval {
  double begin = 0, end = 0;
  bool seen = false;
};

// Per rank, summed over the measured steps, from the aligned timeline:
//  * phase:  time inside ReduceGrads and OptimizerStep (the executor counts it
//            as optimizer time, except completing outstanding sends: comm);
//  * drain:  the part of the phase spent waiting for other ranks. ReduceGrads
//            cannot finish before the rank's partners in it arrive (the other
//            end of the tied embedding, the data-parallel replicas), and
//            OptimizerStep's norm all-reduce not before every rank arrives; a
//            rank that arrives earlier sits idle: the end of the pipeline's
//            bubble, which the executor would count as optimizer time;
//  * reduce: ReduceGrads without its wait for partners.
struct PhaseTimes {
  double phase = 0, drain = 0, reduce = 0;
};

std::vector<PhaseTimes> phase_times(const std::vector<RankRecord>& records) {
  const std::size_t n = records.size();
  std::vector<PhaseTimes> out(n);
  int pp = 1, dp = 1;
  for (const RankRecord& r : records) {
    pp = std::max(pp, r.stage + 1);
    dp = std::max(dp, r.dp_index + 1);
  }
  auto rank_of = [&](int stage, int dp_index) { return std::size_t(stage * dp + dp_index); };
  // step -> per rank (ReduceGrads, OptimizerStep)
  std::map<int, std::vector<std::pair<Interval, Interval>>> steps;
  for (std::size_t r = 0; r < n; ++r)
    for (const TimedAction& a : records[r].actions) {
      if (a.kind != EventKind::ReduceGrads && a.kind != EventKind::OptimizerStep) continue;
      auto& v = steps[a.step];
      v.resize(n);
      Interval& iv = a.kind == EventKind::ReduceGrads ? v[r].first : v[r].second;
      iv = {a.begin, a.end, true};
    }
  for (const auto& [step, v] : steps) {
    double last_opt = -1e300;
    for (const auto& p : v)
      if (p.second.seen) last_opt = std::max(last_opt, p.second.begin);
    for (std::size_t r = 0; r < n && pp * dp == int(n); ++r) {
      const auto& [rg, opt] = v[r];
      if (!rg.seen || !opt.seen) continue;
      const int stage = records[r].stage, dpi = records[r].dp_index;
      // The last arrival among this rank's partners in ReduceGrads.
      double partners = rg.begin;
      auto join = [&](std::size_t j) {
        if (v[j].first.seen) partners = std::max(partners, v[j].first.begin);
      };
      if (pp > 1 && (stage == 0 || stage == pp - 1)) join(rank_of(stage == 0 ? pp - 1 : 0, dpi));
      for (int i = 0; i < dp; ++i) join(rank_of(stage, i));
      const double rg_dur = rg.end - rg.begin, opt_dur = opt.end - opt.begin;
      const double rg_wait = std::clamp(partners - rg.begin, 0.0, rg_dur);
      const double opt_wait = std::clamp(last_opt - opt.begin, 0.0, opt_dur);
      PhaseTimes& pt = out[r];
      pt.phase += rg_dur + opt_dur;
      pt.drain += rg_wait + opt_wait;
      pt.reduce += rg_dur - rg_wait;
    }
  }
  return out;
}

}  // namespace

std::vector<TimeSplit> time_splits(const std::vector<RankRecord>& records) {
  const std::vector<PhaseTimes> phases = phase_times(records);
  std::vector<TimeSplit> out;
  for (std::size_t r = 0; r < records.size(); ++r) {
    const RankRecord& rec = records[r];
    require(rec.steps > 0, "profile: rank ", r, " recorded no measured step");
    const double inv = 1.0 / rec.steps;
    TimeSplit t;
    t.step = rec.window_s * inv;
    t.compute = rec.times.compute * inv;
    t.wait = rec.times.wait * inv;
    // The trainer's phases as one: this rank's own division of them (reduce,
    // drain, optimizer) knew nothing of the other ranks' clocks.
    const double comm_total = rec.times.comm * inv,
                 opt_total = (rec.times.reduce + rec.times.drain + rec.times.optimizer) * inv;
    // The phase holds the executor's optimizer time and the completion of
    // outstanding sends (comm), which comes first in time: the drain is taken
    // from it before the optimizer time, and the rest of it stays comm.
    const double sends = std::clamp(phases[r].phase * inv - opt_total, 0.0, comm_total);
    const double drain = std::min(phases[r].drain * inv, sends + opt_total);
    const double drain_sends = std::min(drain, sends), drain_opt = drain - drain_sends;
    t.drain = drain;
    t.comm = comm_total - drain_sends;
    t.reduce = std::clamp(phases[r].reduce * inv - (sends - drain_sends), 0.0, opt_total - drain_opt);
    t.optimizer = opt_total - drain_opt - t.reduce;
    t.other = t.step - (t.compute + t.wait + comm_total + opt_total);
    out.push_back(t);
  }
  return out;
}

Metrics compute_metrics(const RunLayout& layout, const std::vector<RankRecord>& records) {
  require(int(records.size()) == layout.world(), "profile: ", records.size(),
          " rank records for a world of ", layout.world());
  Metrics m;
  const std::vector<TimeSplit> splits = time_splits(records);
  const double replica_tokens = double(layout.global_batch) / layout.dp * layout.model.T;

  for (std::size_t r = 0; r < records.size(); ++r) {
    const RankRecord& rec = records[r];
    RankMetrics rm;
    rm.rank = rec.rank;
    rm.stage = rec.stage;
    rm.dp_index = rec.dp_index;
    rm.t = splits[r];
    const TimeSplit& t = rm.t;
    const double flops_per_step = layout.rank_flops_per_token(rec.stage) * replica_tokens;
    rm.flops_per_s = flops_per_step / std::max(t.step, 1e-12);
    rm.peak_flops = rec.peak_flops;
    rm.mfu = rec.peak_flops > 0 ? rm.flops_per_s / rec.peak_flops : 0;
    rm.compute_mfu =
        rec.peak_flops > 0 ? flops_per_step / std::max(t.compute, 1e-12) / rec.peak_flops : 0;
    rm.peak_rss_bytes = rec.peak_rss_bytes;
    // Per micro-batch through the whole rank: a chunk's action is 1/v of it.
    // A split backward's B and W both count as backward; W also on its own.
    int nf = 0, nb = 0;
    double covered = 0;
    for (const TimedAction& a : rec.actions) {
      covered += a.end - a.begin;
      const double busy = a.end - a.begin - a.waited;
      if (a.kind == EventKind::Forward) {
        rm.forward_s += busy;
        ++nf;
      } else if (a.kind == EventKind::Backward || a.kind == EventKind::BackwardInput) {
        rm.backward_s += busy;
        ++nb;
      } else if (a.kind == EventKind::BackwardWeight) {
        rm.backward_s += busy;
        rm.weight_s += busy;
      }
    }
    const double chunks = std::max(layout.virtual_stages, 1);
    if (nf) rm.forward_s *= chunks / nf;
    if (nb) {
      rm.backward_s *= chunks / nb;
      rm.weight_s *= chunks / nb;
    }
    rm.outside_s = t.step - covered / rec.steps;
    m.ranks.push_back(rm);
  }

  for (int s = 0; s < layout.pp; ++s) {
    StageMetrics sm;
    sm.stage = s;
    sm.spec = layout.stages.at(std::size_t(s));
    sm.chunks = layout.rank_chunks(s);
    sm.message_bytes = layout.rank_message_bytes(s);
    sm.train_flops_per_token = layout.rank_flops_per_token(s);
    double compute_flops = 0;
    for (const RankMetrics& rm : m.ranks) {
      if (rm.stage != s) continue;
      ++sm.replicas;
      sm.t += rm.t;
      sm.flops_per_s += rm.flops_per_s;
      sm.peak_flops += rm.peak_flops;
      compute_flops += sm.train_flops_per_token * replica_tokens / std::max(rm.t.compute, 1e-12);
      sm.peak_rss_bytes = std::max(sm.peak_rss_bytes, rm.peak_rss_bytes);
      sm.forward_s += rm.forward_s;
      sm.backward_s += rm.backward_s;
      sm.weight_s += rm.weight_s;
      sm.outside_s += rm.outside_s;
    }
    const double inv = 1.0 / std::max(sm.replicas, 1);
    sm.t = sm.t.scaled(inv);
    sm.forward_s *= inv;
    sm.backward_s *= inv;
    sm.weight_s *= inv;
    sm.outside_s *= inv;
    sm.tokens_per_s = double(layout.tokens_per_step()) / std::max(sm.t.step, 1e-12);
    sm.mfu = sm.peak_flops > 0 ? sm.flops_per_s / sm.peak_flops : 0;
    sm.compute_mfu = sm.peak_flops > 0 ? compute_flops / sm.peak_flops : 0;
    m.stages.push_back(sm);
  }

  OverallMetrics& o = m.overall;
  double slowest = 0, compute_flops = 0;
  for (const RankMetrics& rm : m.ranks) {
    compute_flops += rm.compute_mfu * rm.peak_flops;
    o.t += rm.t;
    slowest = std::max(slowest, rm.t.step);
    o.peak_flops += rm.peak_flops;
    o.bubble += rm.t.bubble();
    o.peak_rss_bytes = std::max(o.peak_rss_bytes, rm.peak_rss_bytes);
  }
  const double inv = 1.0 / double(m.ranks.size());
  o.t = o.t.scaled(inv);
  o.step_s = slowest;
  o.bubble *= inv;
  o.bubble_theory = pipeline::theoretical_bubble(layout.schedule, layout.pp, layout.microbatches,
                                                 std::max(layout.virtual_stages, 1));
  o.tokens_per_s = double(layout.tokens_per_step()) / std::max(slowest, 1e-12);
  o.flops_per_s = training_flops_per_token(layout.model) * o.tokens_per_s;
  o.mfu = o.peak_flops > 0 ? o.flops_per_s / o.peak_flops : 0;
  o.compute_mfu = o.peak_flops > 0 ? compute_flops / o.peak_flops : 0;
  const std::size_t n_steps = records.front().step_ends.size();
  for (std::size_t i = 0; i < n_steps; ++i) {
    double worst = 0;
    for (const RankRecord& rec : records) {
      if (i >= rec.step_ends.size()) continue;
      worst = std::max(worst, rec.step_ends[i] - (i ? rec.step_ends[i - 1] : 0.0));
    }
    o.step_times.push_back(worst);
  }
  return m;
}

}  // namespace wiola::profile
