#include "time_split.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "backend/op_times.hpp"
#include "core/rng.hpp"
#include "model/stage_model.hpp"
#include "optim/adamw_optimizer.hpp"

namespace wiola::bench {

namespace {

Tensor tokens_on(Backend& be, const std::vector<std::int32_t>& host) {
  Tensor t = be.alloc(DType::I32, static_cast<std::int64_t>(host.size()), 1);
  be.from_host(host.data(), t);
  return t;
}

enum Phase { kForward, kBackward, kOptimizer, kPhases };
const char* const kPhaseName[kPhases] = {"forward", "backward", "optimizer"};

}  // namespace

void print_time_split(Backend& be, DType dtype, const ModelConfig& c, int micro_batch,
                      int steps, std::FILE* out) {
  OpTimes times(be);
  StageModel model(be, c, StageSpec::whole(c), dtype);
  model.params().init(1);
  const ParamLayout& layout = model.params().layout();
  AdamWOptimizer adam(be, layout, dtype, 0, layout.total(), {});
  adam.take_master_from(model.params().params());
  const std::int64_t n = std::int64_t(micro_batch) * c.T;
  std::vector<std::int32_t> in(static_cast<std::size_t>(n)), tg(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    in[i] = static_cast<std::int32_t>(splitmix64(i * 2 + 1) % std::uint64_t(c.V));
    tg[i] = static_cast<std::int32_t>(splitmix64(i * 2 + 2) % std::uint64_t(c.V));
  }
  StageInput input;
  input.batch = micro_batch;
  input.seq = c.T;
  input.tokens = tokens_on(be, in);
  input.targets = tokens_on(be, tg);
  const Tensor norm = be.alloc(DType::F64, 1, 1);

  // family -> seconds per phase; op -> seconds
  std::map<std::string, std::array<double, kPhases>> by_family;
  std::map<std::string, std::pair<double, long>> by_op;
  double wall[kPhases] = {};
  auto collect = [&](Phase p, double seconds) {
    for (const auto& e : times.table()) {
      by_family[std::string(e.family)][p] += e.seconds;
      auto& op = by_op[std::string(kPhaseName[p]) + " " + std::string(e.op)];
      op.first += e.seconds;
      op.second += e.calls;
    }
    wall[p] += seconds;
    times.reset();
  };
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  long updates = 0;
  for (int s = 0; s <= steps; ++s) {
    const bool timed = s > 0;
    times.set_timing(timed);
    model.params().zero_grads();
    times.reset();
    StageSaved saved;
    auto t0 = Clock::now();
    model.forward(input, /*training=*/true, saved);
    if (timed) collect(kForward, since(t0));
    t0 = Clock::now();
    model.backward(Tensor{}, {}, 1.0 / double(n), saved);
    if (timed) collect(kBackward, since(t0));
    t0 = Clock::now();
    be.fill(norm, 0.0);
    be.sum_squares(model.params().grads(), norm);  // the trainer's gradient norm
    adam.step(model.params().params(), model.params().grads(), 1e-4, 1.0, ++updates);
    if (timed) collect(kOptimizer, since(t0));
  }
  times.set_timing(false);

  double total = 0, ops_total = 0;
  for (double w : wall) total += w;
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [family, t] : by_family) {
    rows.push_back({t[0] + t[1] + t[2], family});
    ops_total += t[0] + t[1] + t[2];
  }
  std::sort(rows.rbegin(), rows.rend());
  const double per = 1e3 / steps;  // ms per step
  std::fprintf(out,
               "  time per op family (ms per step, every op synchronised and timed, %d step%s):\n",
               steps, steps == 1 ? "" : "s");
  std::fprintf(out, "    %-24s %9s %9s %9s %9s %6s\n", "family", "forward", "backward",
               "optimizer", "total", "share");
  for (const auto& [sum, family] : rows) {
    const auto& t = by_family[family];
    std::fprintf(out, "    %-24s %9.2f %9.2f %9.2f %9.2f %5.1f%%\n", family.c_str(), per * t[0],
                 per * t[1], per * t[2], per * sum, 100.0 * sum / total);
  }
  std::fprintf(out, "    %-24s %9.2f %9.2f %9.2f %9.2f %5.1f%%\n", "outside the ops",
               per * wall[0], per * wall[1], per * wall[2], per * (total - ops_total),
               100.0 * (total - ops_total) / total);
  std::fprintf(out, "    (outside the ops: allocation, host-side plans, the model's own code;\n"
                    "     its row's phase columns are the phases' wall times)\n");
  std::fprintf(out, "    %-24s %39.2f\n", "step (wall)", per * total);
  std::vector<std::pair<double, std::string>> ops;
  for (const auto& [op, v] : by_op) ops.push_back({v.first, op});
  std::sort(ops.rbegin(), ops.rend());
  std::fprintf(out, "  the largest ops:\n");
  for (std::size_t i = 0; i < ops.size() && i < 10; ++i)
    std::fprintf(out, "    %-34s %9.2f ms  %5.1f%%  (%ld calls per step)\n", ops[i].second.c_str(),
                 per * ops[i].first, 100.0 * ops[i].first / total,
                 by_op[ops[i].second].second / steps);
}

}  // namespace wiola::bench
