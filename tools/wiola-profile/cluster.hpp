#pragma once
// The network of a (real or hypothetical) cluster for the schedule simulator:
// ranks fill nodes in order (node = world_rank / ranks_per_node), two links
// (intra-node, inter-node), each latency + bytes / bandwidth, and ring
// collectives priced over the slowest link of the ring.
#include <vector>

namespace wiola::profile {

struct Link {
  double latency_s = 0;
  double bandwidth_Bps = 0;  // bytes per second; <= 0 means no bandwidth limit
  // One message of `bytes` over this link.
  double time(double bytes) const;
};

struct Cluster {
  int ranks_per_node = 1;  // GPUs (or CPU ranks) per node
  Link intra, inter;
  int node_of(int world_rank) const { return world_rank / ranks_per_node; }
  const Link& between(int a, int b) const { return node_of(a) == node_of(b) ? intra : inter; }
  // The slowest link of a ring over `ranks` in the given order (wrapping around).
  Link ring_link(const std::vector<int>& ranks) const;
};

// Ring algorithms over n ranks; `bytes` is the whole buffer. Each of the
// algorithm's steps sends bytes / n to the neighbour: all-reduce 2(n - 1)
// steps, reduce-scatter and all-gather n - 1 each. 0 when n <= 1.
double ring_allreduce_s(double bytes, int n, const Link& link);
double ring_reduce_scatter_s(double bytes, int n, const Link& link);
double ring_allgather_s(double bytes, int n, const Link& link);

}  // namespace wiola::profile
