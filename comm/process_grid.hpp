#pragma once
// The PP x DP process grid and its sub-communicators.
//
// Rank layout: world_rank = stage * dp + dp_index. Data-parallel peers (same
// stage) get consecutive world ranks, pipeline neighbours are `dp` ranks apart.
// Why: mpirun places consecutive ranks on the same node, and the data-parallel
// reduction moves the most bytes (the whole gradient / parameter buffer, every
// step), so it should stay on the fast intra-node links; the pipeline only
// sends one micro-batch's boundary activations (B x T x d) per hand-off, which
// tolerates the slower inter-node network.
#include <memory>
#include <string>

#include "comm/communicator.hpp"

namespace wiola::comm {

struct ProcessGrid {
  int pp = 1;
  int dp = 1;
  int world_rank = 0;

  // Validates before any work: pp, dp >= 1, world_size == pp * dp, rank in range.
  static ProcessGrid make(int world_size, int pp, int dp, int world_rank);

  int world_size() const { return pp * dp; }
  int stage() const { return world_rank / dp; }
  int dp_index() const { return world_rank % dp; }
  int rank_of(int stage, int dp_index) const { return stage * dp + dp_index; }
  bool first_stage() const { return stage() == 0; }
  bool last_stage() const { return stage() == pp - 1; }
  // Holds a copy of the tied embedding (stage 0 and stage pp-1).
  bool in_embedding_group() const { return first_stage() || last_stage(); }
  // "pp 2 x dp 2: world rank 3 = stage 1, dp index 1"
  std::string describe() const;
};

// Throws wiola::Error, e.g. "world size 3 does not equal --pp 2 × --dp 2 = 4".
void check_grid(int world_size, int pp, int dp);

struct GridGroups {
  // Same dp_index, all stages; rank = stage.
  std::unique_ptr<Communicator> pipeline;
  // Same stage, all dp indices; rank = dp_index.
  std::unique_ptr<Communicator> data;
  // Stage 0 and stage pp-1 with the same dp_index (rank 0 = first stage), for
  // summing the two copies of the tied embedding's gradient. Size 1 when
  // pp == 1; nullptr on middle stages.
  std::unique_ptr<Communicator> embedding;
};

// Collective over `world` (three splits); `grid` must describe this rank.
GridGroups make_groups(Communicator& world, const ProcessGrid& grid);

}  // namespace wiola::comm
