#pragma once
// Layer-to-stage partition for pipeline parallelism: which contiguous layer
// range each of the `pp` stages holds, chosen by a cost model, or given
// explicitly ("--stage-layers 7,7,7,7").
//
// The cost model is in partition/cost_model.hpp.
#include <string>
#include <vector>

#include "partition/cost_model.hpp"

namespace wiola {

// Contiguous ranges, each >= 1 layer, minimising the largest stage compute
// cost (exact dynamic programme). Among optimal splits it takes the one with
// the smallest largest stage memory; remaining ties are broken deterministically.
// Throws when pp < 1 or pp > L.
std::vector<StageSpec> partition_layers(const ModelConfig& c, int pp, const CostModel& m = {});

// Explicit split, e.g. "7,7,7,7" for L = 28 and pp = 4. Throws when pp is
// invalid, the entry count is not pp, an entry is not a positive integer, or
// the entries do not sum to L.
// With virtual_stages v > 1 (interleaved), one entry per chunk: pp × v
// entries in model order (virtual stage c · pp + s is chunk c of stage s).
std::vector<StageSpec> parse_stage_layers(const std::string& spec, const ModelConfig& c, int pp,
                                          int virtual_stages = 1);

// Stage `stage`'s chunks of a partition into pp × v virtual stages (virtual
// stage c · pp + s is chunk c of stage s), in model order; the stage itself
// when the partition has one entry per stage.
std::vector<StageSpec> stage_chunks(const std::vector<StageSpec>& virtual_stages, int pp,
                                    int stage);
// The layers of a stage's chunks: "[0,2)", or "[0,1)+[4,5)" with two chunks.
std::string chunk_layers_text(const std::vector<StageSpec>& chunks);

// Largest stage compute cost over the mean (1 = perfectly balanced).
double partition_imbalance(const ModelConfig& c, const std::vector<StageSpec>& stages,
                           const CostModel& m = {});

// One line per stage: layers, embed/head, estimated GFLOP per token, parameter
// count, memory estimate; then the imbalance.
// With chunks_per_stage v > 1, `stages` holds pp × v chunks (virtual stage
// c · pp + s is chunk c of stage s) and each line names its stage and chunk.
std::string describe_partition(const ModelConfig& c, const std::vector<StageSpec>& stages,
                               const CostModel& m = {}, int chunks_per_stage = 1);

}  // namespace wiola
