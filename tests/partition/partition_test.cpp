// partition_layers is optimal (against brute force), parse_stage_layers and
// every error, the cost model's parameter count and the description.
#include "partition/partition.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <limits>

#include "core/error.hpp"
#include "model/flops.hpp"
#include "core/param_layout.hpp"

namespace wiola {
namespace {

const char* kPresets[] = {"wiola-120m", "wiola-360m", "wiola-700m", "wiola-1.5b"};

double max_cost(const ModelConfig& c, const std::vector<StageSpec>& stages) {
  double worst = 0;
  for (std::size_t s = 0; s < stages.size(); ++s)
    worst =
        std::max(worst, stage_cost(c, stages[s], int(s), int(stages.size())).train_flops_per_token);
  return worst;
}

// Smallest largest stage cost over every split of L layers into pp stages.
double brute_force(const ModelConfig& c, int pp) {
  const int L = c.L;
  std::vector<std::vector<double>> cost(L + 1, std::vector<double>(L + 1, 0));
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j <= L; ++j)
      cost[i][j] = stage_cost(c, {i, j, i == 0, j == L}, 0, pp).train_flops_per_token;
  double best = std::numeric_limits<double>::infinity();
  std::function<void(int, int, double)> go = [&](int first, int left, double worst) {
    if (worst >= best) return;
    if (left == 1) {
      best = std::min(best, std::max(worst, cost[first][L]));
      return;
    }
    for (int end = first + 1; end <= L - (left - 1); ++end)
      go(end, left - 1, std::max(worst, cost[first][end]));
  };
  go(0, pp, 0.0);
  return best;
}

void expect_well_formed(const ModelConfig& c, const std::vector<StageSpec>& stages, int pp) {
  ASSERT_EQ(int(stages.size()), pp);
  int next = 0;
  for (int s = 0; s < pp; ++s) {
    EXPECT_EQ(stages[s].first_layer, next);
    EXPECT_GE(stages[s].num_layers(), 1);
    EXPECT_EQ(stages[s].embed, s == 0);
    EXPECT_EQ(stages[s].head, s == pp - 1);
    next = stages[s].end_layer;
  }
  EXPECT_EQ(next, c.L);
}

TEST(partitionLayers, PresetsAreOptimal) {
  for (const char* name : kPresets) {
    const ModelConfig c = preset(name);
    for (int pp : {1, 2, 4, 8}) {
      const auto stages = partition_layers(c, pp);
      SCOPED_TRACE(describe_partition(c, stages));
      expect_well_formed(c, stages, pp);
      const double bf = brute_force(c, pp);
      EXPECT_NEAR(max_cost(c, stages), bf, 1e-9 * bf) << name << " pp=" << pp;
      EXPECT_GE(partition_imbalance(c, stages), 1.0);
    }
  }
}

TEST(partitionLayers, SmallModelsAreOptimalForEveryPp) {
  for (const char* name : {"wiola-tiny", "wiola-mini", "wiola-small", "wiola-120m"}) {
    const ModelConfig c = preset(name);
    for (int pp = 1; pp <= c.L; ++pp) {
      const auto stages = partition_layers(c, pp);
      expect_well_formed(c, stages, pp);
      const double bf = brute_force(c, pp);
      EXPECT_NEAR(max_cost(c, stages), bf, 1e-9 * bf) << name << " pp=" << pp;
    }
  }
}

TEST(partitionLayers, HeadStageGetsFewerLayers) {
  // wiola-120m's tied head (6 d V FLOPs/token) costs about two layers.
  const ModelConfig c = preset("wiola-120m");
  const auto stages = partition_layers(c, 4);
  EXPECT_LT(stages[3].num_layers(), stages[0].num_layers()) << describe_partition(c, stages);
}

TEST(partitionLayers, OneStageHoldsEverything) {
  const ModelConfig c = preset("wiola-700m");
  const auto stages = partition_layers(c, 1);
  ASSERT_EQ(stages.size(), 1u);
  EXPECT_EQ(stages[0].first_layer, 0);
  EXPECT_EQ(stages[0].end_layer, c.L);
  EXPECT_TRUE(stages[0].embed && stages[0].head);
  EXPECT_DOUBLE_EQ(partition_imbalance(c, stages), 1.0);
}

TEST(partitionLayers, Errors) {
  ModelConfig c = preset("wiola-120m");
  c.L = 8;
  try {
    partition_layers(c, 9);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "--pp 9 is larger than the 8 layers (every stage needs at least one layer)");
  }
  EXPECT_THROW(partition_layers(c, 0), Error);
  EXPECT_THROW(partition_layers(c, -2), Error);
}

TEST(partitionCost, ParamsMatchTheLayout) {
  const ModelConfig c = preset("wiola-360m");
  for (const StageSpec& s : {StageSpec{0, 5, true, false}, StageSpec{5, 11, false, false},
                             StageSpec{11, 16, false, true}, StageSpec{0, 16, true, true}})
    EXPECT_EQ(stage_cost(c, s, 0, 1).params, ParamLayout(c, s).parameters());
  // The two copies of the tied embedding are both counted.
  std::int64_t sum = 0;
  for (const auto& s : partition_layers(c, 4)) sum += ParamLayout(c, s).parameters();
  EXPECT_EQ(sum, param_count(c) + std::int64_t(c.V) * c.d);
}

TEST(partitionCost, Components) {
  const ModelConfig c = preset("wiola-1.5b");
  const CostModel m;
  const StageCost mid = stage_cost(c, {3, 5, false, false}, 1, 4, m);
  EXPECT_DOUBLE_EQ(mid.train_flops_per_token,
                   3 * (layer_forward_flops_per_token(c, 3) + layer_forward_flops_per_token(c, 4)));
  const StageCost first = stage_cost(c, {0, 1, true, false}, 0, 4, m);
  EXPECT_DOUBLE_EQ(first.train_flops_per_token,
                   3 * layer_forward_flops_per_token(c, 0) + embedding_cost_per_token(c, m));
  const StageCost last = stage_cost(c, {27, 28, false, true}, 3, 4, m);
  EXPECT_DOUBLE_EQ(last.train_flops_per_token, 3 * layer_forward_flops_per_token(c, 27) +
                                                   3 * head_forward_flops_per_token(c) +
                                                   loss_cost_per_token(c, m));
  // 1F1B: stage s holds pp - s micro-batches.
  EXPECT_EQ(first.in_flight, 4);
  EXPECT_EQ(last.in_flight, 1);
  EXPECT_DOUBLE_EQ(mid.activation_bytes, mid.activation_bytes_per_token * c.T * 3);
  // With 2 micro-batches per step, never more than exist: min(P - s, m).
  CostModel two = m;
  two.microbatches = 2;
  EXPECT_EQ(stage_cost(c, {0, 1, true, false}, 0, 4, two).in_flight, 2);
  EXPECT_EQ(stage_cost(c, {27, 28, false, true}, 3, 4, two).in_flight, 1);
  // GPipe holds every micro-batch on every stage.
  CostModel gpipe = m;
  gpipe.microbatches = 8;
  gpipe.hold_all_microbatches = true;
  EXPECT_EQ(stage_cost(c, {27, 28, false, true}, 3, 4, gpipe).in_flight, 8);
  EXPECT_NE(describe_partition(c, parse_stage_layers("7,7,7,7", c, 4), gpipe).find("GPipe"),
            std::string::npos);
  EXPECT_GT(activation_elements_per_token_per_layer(c), 10.0 * c.d);
  // Memory-bound parts stay small next to a layer.
  EXPECT_LT(embedding_cost_per_token(c, m), 0.05 * 3 * layer_forward_flops_per_token(c, 1));
}

TEST(partitionParse, ExplicitSplit) {
  const ModelConfig c = preset("wiola-1.5b");
  const auto stages = parse_stage_layers("7,7,7,7", c, 4);
  expect_well_formed(c, stages, 4);
  EXPECT_EQ(stages[2].first_layer, 14);
  EXPECT_EQ(stages[2].end_layer, 21);
  const auto uneven = parse_stage_layers(" 8, 7 ,7,6 ", c, 4);
  expect_well_formed(c, uneven, 4);
  EXPECT_EQ(uneven[0].num_layers(), 8);
  EXPECT_EQ(uneven[3].num_layers(), 6);
  const auto one = parse_stage_layers("28", c, 1);
  EXPECT_TRUE(one[0].embed && one[0].head);
}

void expect_error(const std::string& spec, int pp, const std::string& needle) {
  const ModelConfig c = preset("wiola-1.5b");
  try {
    parse_stage_layers(spec, c, pp);
    ADD_FAILURE() << "no error for '" << spec << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "'" << spec << "': " << e.what();
  }
}

TEST(partitionParse, Errors) {
  expect_error("7,7,7", 4, "has 3 entries but --pp is 4");
  expect_error("7,7,7,7,0", 5, "entry 5 is 0");
  expect_error("7,-7,14,14", 4, "entry 2 is -7");
  expect_error("7,7,7,6", 4, "sums to 27 layers but the model has 28");
  expect_error("7,7,7,8", 4, "sums to 29");
  expect_error("7,x,7,7", 4, "entry 2 'x' is not a whole number");
  expect_error("7,,7,7", 4, "entry 2 '' is not a whole number");
  expect_error("7.5,7,7,6.5", 4, "not a whole number");
  expect_error("", 1, "not a whole number");
  expect_error("7,7,7,7", 0, "--pp must be at least 1");
  expect_error("7,7,7,7", 29, "--pp 29 is larger than the 28 layers");
}

TEST(partitionParse, ChunksOfAnInterleavedSplit) {
  const ModelConfig c = preset("wiola-1.5b");  // L = 28
  const auto chunks = parse_stage_layers("4,3,4,3,4,3,4,3", c, 4, 2);
  ASSERT_EQ(chunks.size(), 8u);
  EXPECT_TRUE(chunks.front().embed);
  EXPECT_TRUE(chunks.back().head);
  EXPECT_EQ(chunks[4].first_layer, 14);
  try {
    parse_stage_layers("7,7,7,7", c, 4, 2);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--pp 4 × --virtual-stages 2 makes 8 chunks"),
              std::string::npos)
        << e.what();
  }
  const std::string d = describe_partition(c, chunks, {}, 2);
  EXPECT_NE(d.find("stage 3 chunk 1: layers [25, 28)"), std::string::npos) << d;
}

TEST(partitionDescribe, NamesEveryStage) {
  const ModelConfig c = preset("wiola-700m");
  const auto stages = partition_layers(c, 4);
  const std::string d = describe_partition(c, stages);
  for (int s = 0; s < 4; ++s)
    EXPECT_NE(d.find("stage " + std::to_string(s) + ": layers ["), std::string::npos) << d;
  EXPECT_NE(d.find("embed"), std::string::npos);
  EXPECT_NE(d.find("head"), std::string::npos);
  EXPECT_NE(d.find("GFLOP/token"), std::string::npos);
  EXPECT_NE(d.find("imbalance"), std::string::npos);
  std::cout << d;
}

}  // namespace
}  // namespace wiola
