#pragma once
// Which ranks share a machine: every rank's host name, gathered over the world
// communicator, and a rank's place among the ranks of its host. Ranks with the
// same host name are one node, ordered by world rank, as mpirun and srun
// number their node-local ranks; the trainer takes its device from that local
// rank (train/device_plan.hpp).
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace wiola::comm {

// Every rank's `mine`, in rank order (a collective: every rank calls it).
// Strings longer than kMaxGatheredString bytes are cut there.
inline constexpr std::size_t kMaxGatheredString = 252;
std::vector<std::string> gather_strings(Communicator& world, const std::string& mine);

struct NodePlace {
  int local_rank = 0;      // place among the ranks of this host, by world rank
  int local_size = 1;      // ranks on this host
  std::vector<int> ranks;  // the world ranks on this host, ascending
};

// `hosts[r]` is world rank r's host name.
NodePlace place_on_node(const std::vector<std::string>& hosts, int rank);

}  // namespace wiola::comm
