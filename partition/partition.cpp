#include "partition/partition.hpp"

#include <charconv>
#include <limits>

#include "core/error.hpp"
#include "core/text.hpp"

namespace wiola {

namespace {

void check_pp(const ModelConfig& c, int pp) {
  require(pp >= 1, "--pp must be at least 1, got ", pp);
  require(pp <= c.L, "--pp ", pp, " is larger than the ", c.L,
          " layers (every stage needs at least one layer)");
}

StageSpec range(int first, int end, int L) { return {first, end, first == 0, end == L}; }

}  // namespace

std::vector<StageSpec> partition_layers(const ModelConfig& c, int pp, const CostModel& m) {
  check_pp(c, pp);
  const int L = c.L;
  constexpr double inf = std::numeric_limits<double>::infinity();
  // Compute cost of a stage holding [i, j) (independent of its index: the
  // embedding and head go with i == 0 and j == L).
  std::vector<std::vector<double>> cost(L + 1, std::vector<double>(L + 1, inf));
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j <= L; ++j)
      cost[i][j] = stage_cost(c, range(i, j, L), 0, pp, m).train_flops_per_token;

  // Pass 1: best[k][j] = smallest largest cost splitting layers [0, j) into k stages.
  std::vector<std::vector<double>> best(pp + 1, std::vector<double>(L + 1, inf));
  for (int j = 1; j <= L; ++j) best[1][j] = cost[0][j];
  for (int k = 2; k <= pp; ++k)
    for (int j = k; j <= L; ++j)
      for (int i = k - 1; i < j; ++i)
        best[k][j] = std::min(best[k][j], std::max(best[k - 1][i], cost[i][j]));
  const double cap = best[pp][L] * (1 + 1e-12);

  // Pass 2: among splits whose every stage costs <= the optimum, the smallest
  // largest stage memory (memory depends on the stage index: in-flight count).
  std::vector<std::vector<double>> mem(pp + 1, std::vector<double>(L + 1, inf));
  std::vector<std::vector<int>> from(pp + 1, std::vector<int>(L + 1, -1));
  for (int j = 1; j <= L; ++j)
    if (cost[0][j] <= cap) mem[1][j] = stage_cost(c, range(0, j, L), 0, pp, m).memory_bytes();
  for (int k = 2; k <= pp; ++k)
    for (int j = k; j <= L; ++j)
      for (int i = k - 1; i < j; ++i) {
        if (mem[k - 1][i] == inf || cost[i][j] > cap) continue;
        const double v =
            std::max(mem[k - 1][i], stage_cost(c, range(i, j, L), k - 1, pp, m).memory_bytes());
        if (v < mem[k][j]) {
          mem[k][j] = v;
          from[k][j] = i;
        }
      }
  require(mem[pp][L] < inf, "partition: no split of ", L, " layers over ", pp,
          " stages (internal error)");

  std::vector<StageSpec> out(pp);
  int end = L;
  for (int k = pp; k >= 1; --k) {
    const int first = k == 1 ? 0 : from[k][end];
    out[k - 1] = range(first, end, L);
    end = first;
  }
  return out;
}

std::vector<StageSpec> stage_chunks(const std::vector<StageSpec>& virtual_stages, int pp,
                                    int stage) {
  require(pp >= 1 && virtual_stages.size() % std::size_t(pp) == 0 && stage >= 0 && stage < pp,
          "stage ", stage, " of ", pp, " has no chunks in a partition of ", virtual_stages.size());
  std::vector<StageSpec> out;
  for (std::size_t k = std::size_t(stage); k < virtual_stages.size(); k += std::size_t(pp))
    out.push_back(virtual_stages[k]);
  return out;
}

std::string chunk_layers_text(const std::vector<StageSpec>& chunks) {
  std::string out;
  for (const StageSpec& k : chunks)
    out += (out.empty() ? "[" : "+[") + std::to_string(k.first_layer) + "," +
           std::to_string(k.end_layer) + ")";
  return out;
}

std::vector<StageSpec> parse_stage_layers(const std::string& spec, const ModelConfig& c, int pp,
                                          int virtual_stages) {
  const int pieces = pp * virtual_stages;
  check_pp(c, pieces);
  std::vector<int> counts;
  int entry = 0;
  for (const std::string& item : split_list(spec)) {
    ++entry;
    int v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    require(!item.empty() && ec == std::errc() && ptr == item.data() + item.size(),
            "--stage-layers '", spec, "': entry ", entry, " '", item, "' is not a whole number");
    require(v > 0, "--stage-layers '", spec, "': entry ", entry, " is ", v,
            "; every stage needs at least one layer");
    counts.push_back(v);
  }
  if (virtual_stages == 1)
    require(static_cast<int>(counts.size()) == pp, "--stage-layers '", spec, "' has ",
            counts.size(), " entries but --pp is ", pp);
  else
    require(static_cast<int>(counts.size()) == pieces, "--stage-layers '", spec, "' has ",
            counts.size(), " entries but --pp ", pp, " × --virtual-stages ", virtual_stages,
            " makes ", pieces, " chunks (one entry each, in model order)");
  long long sum = 0;
  for (int v : counts) sum += v;
  require(sum == c.L, "--stage-layers '", spec, "' sums to ", sum, " layers but the model has ",
          c.L);
  std::vector<StageSpec> out;
  int first = 0;
  for (int v : counts) {
    out.push_back(range(first, first + v, c.L));
    first += v;
  }
  return out;
}

double partition_imbalance(const ModelConfig& c, const std::vector<StageSpec>& stages,
                           const CostModel& m) {
  require(!stages.empty(), "partition: no stages");
  const int pp = static_cast<int>(stages.size());
  double worst = 0, sum = 0;
  for (int s = 0; s < pp; ++s) {
    const double f = stage_cost(c, stages[s], s, pp, m).train_flops_per_token;
    worst = std::max(worst, f);
    sum += f;
  }
  return sum > 0 ? worst / (sum / pp) : 1.0;
}

}  // namespace wiola
