#include "comm/process_grid.hpp"

#include <sstream>

#include "core/error.hpp"

namespace wiola::comm {

void check_grid(int world_size, int pp, int dp) {
  require(pp >= 1, "--pp must be at least 1, got ", pp);
  require(dp >= 1, "--dp must be at least 1, got ", dp);
  require(static_cast<long long>(pp) * dp == world_size, "world size ", world_size,
          " does not equal --pp ", pp, " × --dp ", dp, " = ", static_cast<long long>(pp) * dp);
}

ProcessGrid ProcessGrid::make(int world_size, int pp, int dp, int world_rank) {
  check_grid(world_size, pp, dp);
  require(world_rank >= 0 && world_rank < world_size, "world rank ", world_rank,
          " is out of range for world size ", world_size);
  return ProcessGrid{pp, dp, world_rank};
}

std::string ProcessGrid::describe() const {
  std::ostringstream os;
  os << "pp " << pp << " x dp " << dp << ": world rank " << world_rank << " = stage " << stage()
     << ", dp index " << dp_index();
  return os.str();
}

GridGroups make_groups(Communicator& world, const ProcessGrid& grid) {
  require(world.size() == grid.world_size() && world.rank() == grid.world_rank, "process grid (",
          grid.describe(), ") does not match communicator '", world.name(), "' (rank ",
          world.rank(), " of ", world.size(), ")");
  GridGroups g;
  // Every rank calls every split, in the same order (they are collective).
  g.pipeline = world.split(grid.dp_index(), grid.stage(), "pipeline");
  g.data = world.split(grid.stage(), grid.dp_index(), "data");
  g.embedding = world.split(grid.in_embedding_group() ? grid.dp_index() : -1,
                            grid.first_stage() ? 0 : 1, "embedding");
  return g;
}

}  // namespace wiola::comm
