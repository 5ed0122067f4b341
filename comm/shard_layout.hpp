#pragma once
// The geometry of an uneven reduce-scatter or all-gather (communicator.hpp):
// rank r's shard is elements [offsets[r], offsets[r] + counts[r]) of the full
// buffer.
//
// NCCL's ncclReduceScatter and ncclAllGather take one count for every rank.
// When the counts are equal (`even`) the NCCL implementation calls them as
// they are. When they are not, it runs one rooted collective per shard inside
// one NCCL group -- ncclReduce to root r over shard r, or ncclBroadcast from
// root r of shard r -- skipping empty shards. Why not padding into an even
// scratch buffer: the ZeRO buffers are the largest allocations of a run, and
// ZeRO-2's per-layer buckets are very uneven (a bucket usually falls into one
// or two ranks' shards), so padding to the largest shard would need up to
// size x the bucket in scratch memory plus two extra copies. The grouped form
// needs no scratch and no copies, moves the same bytes over each link as a
// ring reduce-scatter, and NCCL runs the group as one launch.
#include <cstddef>
#include <span>
#include <vector>

namespace wiola::comm {

struct ShardLayout {
  std::vector<std::size_t> counts, offsets;
  std::size_t total = 0;
  bool even = true;  // every count is the same (also when all are zero)

  explicit ShardLayout(std::span<const std::size_t> c) : counts(c.begin(), c.end()) {
    for (std::size_t n : counts) {
      offsets.push_back(total);
      total += n;
      even = even && n == counts.front();
    }
  }
  // The ranks with a non-empty shard, in rank order: the roots of the grouped form.
  std::vector<int> roots() const {
    std::vector<int> r;
    for (std::size_t i = 0; i < counts.size(); ++i)
      if (counts[i] > 0) r.push_back(static_cast<int>(i));
    return r;
  }
};

}  // namespace wiola::comm
