// The human-readable partition table printed at start-up.
#include <cstdarg>
#include <cstdio>
#include <string>

#include "partition/partition.hpp"

namespace wiola {

namespace {

__attribute__((format(printf, 1, 2))) std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

std::string describe_partition(const ModelConfig& c, const std::vector<StageSpec>& stages,
                               const CostModel& m, int chunks_per_stage) {
  const int pp = static_cast<int>(stages.size());
  if (chunks_per_stage > 1) {
    // Interleaved: one line per chunk; the memory is the rank's, printed by its caller.
    const int ranks = pp / chunks_per_stage;
    std::string out = format("partition of %s (L=%d) over %d stages x %d chunks (interleaved)\n",
                             c.preset.c_str(), c.L, ranks, chunks_per_stage);
    for (int v = 0; v < pp; ++v) {
      const StageSpec& st = stages[v];
      const StageCost k = stage_cost(c, st, v, pp, m);
      const std::string layers = format("[%d, %d)", st.first_layer, st.end_layer);
      const std::string parts = std::string(st.embed ? "embed" : "") + (st.head ? "head" : "");
      out += format("  stage %d chunk %d: layers %-9s %2d layer%s %-6s %8.3f GFLOP/token  %8.2fM "
                    "params\n",
                    v % ranks, v / ranks, layers.c_str(), st.num_layers(),
                    st.num_layers() == 1 ? " " : "s", parts.c_str(),
                    k.train_flops_per_token / 1e9, double(k.params) / 1e6);
    }
    out += format("  imbalance (max/mean compute over chunks): %.3f\n",
                  partition_imbalance(c, stages, m));
    return out;
  }
  const long long tokens = m.microbatch_tokens > 0 ? m.microbatch_tokens : c.T;
  std::string out = format("partition of %s (L=%d) over %d stage%s", c.preset.c_str(), c.L, pp,
                           pp == 1 ? "" : "s");
  out += format(" (memory: %.0f B/param, %.0f B/activation, %lld tokens/micro-batch, %s)\n",
                m.bytes_per_param, m.bytes_per_activation, tokens,
                m.hold_all_microbatches ? "GPipe" : "1F1B");
  for (int s = 0; s < pp; ++s) {
    const StageSpec& st = stages[s];
    const StageCost k = stage_cost(c, st, s, pp, m);
    const std::string layers = format("[%d, %d)", st.first_layer, st.end_layer);
    const std::string parts = std::string(st.embed ? "embed" : "") +
                              (st.embed && st.head ? "+" : "") + (st.head ? "head" : "");
    out += format("  stage %d: layers %-9s %2d layer%s %-10s %8.3f GFLOP/token  %8.2fM params", s,
                  layers.c_str(), st.num_layers(), st.num_layers() == 1 ? " " : "s", parts.c_str(),
                  k.train_flops_per_token / 1e9, double(k.params) / 1e6);
    out += format("  memory %.2f GiB (state %.2f + activations %.2f for %d micro-batch%s)\n",
                  k.memory_bytes() / GiB, k.param_bytes / GiB, k.activation_bytes / GiB,
                  k.in_flight, k.in_flight == 1 ? "" : "es");
  }
  out += format("  imbalance (max/mean compute): %.3f\n", partition_imbalance(c, stages, m));
  return out;
}

}  // namespace wiola
