#include "wiola-profile/sweep.hpp"

#include <algorithm>
#include <ostream>

#include "core/error.hpp"
#include "profile/profile_run.hpp"
#include "wiola-profile/projection.hpp"

namespace wiola::profile {

std::string SweepPoint::describe() const {
  std::string s = "pp ";
  s += std::to_string(pp);
  s += " dp " + std::to_string(dp);
  s += " mb " + std::to_string(micro_batch);
  s += " m " + std::to_string(microbatches);
  s += " zero " + std::to_string(zero);
  s += " " + schedule;
  return s;
}

std::pair<pipeline::ScheduleKind, int> parse_sweep_schedule(const std::string& item,
                                                              int fallback) {
  const std::size_t colon = item.find(':');
  const pipeline::ScheduleKind kind = pipeline::parse_schedule_kind(item.substr(0, colon));
  if (kind != pipeline::ScheduleKind::Interleaved) {
    require(colon == std::string::npos, "--sweep-schedule: '", item,
            "': only interleaved takes a number of chunks (interleaved:V)");
    return {kind, 1};
  }
  if (colon == std::string::npos) return {kind, std::max(fallback, 2)};
  int v = 0;
  try {
    std::size_t used = 0;
    v = std::stoi(item.substr(colon + 1), &used);
    if (used != item.size() - colon - 1) v = 0;
  } catch (const std::exception&) {
    v = 0;
  }
  require(v >= 2, "--sweep-schedule: '", item, "': interleaved:V needs V >= 2 chunks per stage");
  return {kind, v};
}

std::vector<SweepPoint> sweep_points(const TrainOptions& base, const SweepSpec& spec, int world,
                                     std::vector<std::string>& skipped) {
  std::vector<int> pps = spec.pp;
  if (pps.empty())
    for (int p = 1; p <= world; ++p)
      if (world % p == 0 && p <= base.model.config.L) pps.push_back(p);
  const std::vector<int> mbs =
      spec.micro_batch.empty() ? std::vector<int>{base.parallel.micro_batch} : spec.micro_batch;
  const std::vector<int> zeros =
      spec.zero.empty() ? std::vector<int>{base.parallel.zero} : spec.zero;
  const std::vector<std::string> scheds =
      spec.schedule.empty() ? std::vector<std::string>{std::string(
                                  pipeline::schedule_kind_name(base.parallel.schedule))}
                            : spec.schedule;
  const std::vector<int> counts = spec.microbatches.empty() ? std::vector<int>{0} : spec.microbatches;
  std::vector<SweepPoint> out;
  for (int pp : pps) {
    if (pp < 1 || world % pp != 0) {
      skipped.push_back("pp " + std::to_string(pp) + ": does not divide the world size " +
                        std::to_string(world));
      continue;
    }
    const int dp = world / pp;
    for (int mb : mbs)
      for (int m : counts) {
        // 0 stands for "keep the global batch".
        const int global = m > 0 ? m * mb * dp : base.parallel.global_batch;
        if (m == 0 && (mb < 1 || base.parallel.global_batch % (mb * dp) != 0)) {
          skipped.push_back("pp " + std::to_string(pp) + " mb " + std::to_string(mb) +
                            ": --global-batch " + std::to_string(base.parallel.global_batch) +
                            " is not a multiple of dp x micro-batch = " + std::to_string(dp * mb));
          continue;
        }
        for (int z : zeros)
          for (const std::string& sc : scheds) {
            const auto [kind, chunks] = parse_sweep_schedule(sc, base.parallel.virtual_stages);
            const int m_count = global / (mb * dp);
            if (pp * chunks > base.model.config.L) {
              skipped.push_back("pp " + std::to_string(pp) + " " + sc + ": " +
                                std::to_string(pp * chunks) + " virtual stages for " +
                                std::to_string(base.model.config.L) + " layers");
              continue;
            }
            try {
              pipeline::check_schedule_shape(kind, pp, m_count, chunks);
            } catch (const Error& e) {
              skipped.push_back("pp " + std::to_string(pp) + " m " + std::to_string(m_count) +
                                " " + sc + ": " + e.what());
              continue;
            }
            SweepPoint p;
            p.virtual_stages = chunks;
            p.pp = pp;
            p.dp = dp;
            p.micro_batch = mb;
            p.zero = z;
            p.schedule = sc;
            p.global_batch = global;
            p.microbatches = global / (mb * dp);
            out.push_back(p);
          }
      }
  }
  return out;
}

std::vector<SweepRow> run_sweep(const TrainOptions& base, const std::vector<SweepPoint>& points,
                                int warmup, int measured, comm::Communicator& world,
                                const std::string& host, const PeakFlops& peak,
                                const LinkProbe& link, std::ostream& progress) {
  std::vector<SweepRow> rows;
  const bool rank0 = world.rank() == 0;
  int index = 0;
  for (const SweepPoint& p : points) {
    ++index;
    TrainOptions o = base;
    o.parallel.pp = p.pp;
    o.parallel.dp = p.dp;
    o.parallel.micro_batch = p.micro_batch;
    o.parallel.global_batch = p.global_batch;
    o.parallel.zero = p.zero;
    o.parallel.schedule = parse_sweep_schedule(p.schedule, p.virtual_stages).first;
    o.parallel.virtual_stages = p.virtual_stages;
    // An explicit split only fits the pipeline depth it was written for.
    if (!o.parallel.stage_layers.empty() &&
        std::count(o.parallel.stage_layers.begin(), o.parallel.stage_layers.end(), ',') + 1 !=
            p.pp * p.virtual_stages)
      o.parallel.stage_layers.clear();
    SweepRow row;
    row.point = p;
    try {
      const ProfileResult res = run_profile(o, warmup, measured, world, host, peak, link);
      if (rank0) {
        const OverallMetrics& m = res.metrics.overall;
        row.ok = true;
        row.step_s = m.step_s;
        row.tokens_per_s = m.tokens_per_s;
        row.mfu = m.mfu;
        row.bubble = m.bubble;
        row.bubble_theory = m.bubble_theory;
        row.peak_rss_bytes = m.peak_rss_bytes;
        const Projection pr = project(projection_from_profile(measured_profile(res), {}));
        row.predicted_step_s = pr.metrics.overall.step_s;
        row.predicted_bubble = pr.metrics.overall.bubble;
      }
    } catch (const CollectiveError& e) {
      row.error = e.what();
    }
    if (rank0) {
      char buf[200];
      if (row.ok)
        std::snprintf(buf, sizeof buf, "[%d/%zu] %-36s %10.0f tokens/s  step %8.2f ms\n", index,
                      points.size(), p.describe().c_str(), row.tokens_per_s, row.step_s * 1e3);
      else
        std::snprintf(buf, sizeof buf, "[%d/%zu] %-36s refused: ", index, points.size(),
                      p.describe().c_str());
      progress << buf;
      if (!row.ok) progress << row.error << "\n";
      progress.flush();
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace wiola::profile
