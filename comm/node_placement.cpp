#include "comm/node_placement.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"

namespace wiola::comm {

std::vector<std::string> gather_strings(Communicator& world, const std::string& mine) {
  // Fixed-size records of int32 words: a length, then the bytes.
  constexpr std::size_t kWords = (kMaxGatheredString + 4 + 3) / 4;
  std::vector<std::int32_t> send(kWords, 0), recv(kWords * std::size_t(world.size()), 0);
  const std::size_t n = std::min(mine.size(), kMaxGatheredString);
  send[0] = std::int32_t(n);
  std::memcpy(send.data() + 1, mine.data(), n);
  const std::vector<std::size_t> counts(std::size_t(world.size()), kWords);
  world.allgather(send.data(), recv.data(), counts, DType::I32);
  std::vector<std::string> out;
  for (int r = 0; r < world.size(); ++r) {
    const std::int32_t* rec = recv.data() + std::size_t(r) * kWords;
    require(rec[0] >= 0 && std::size_t(rec[0]) <= kMaxGatheredString,
            "gather_strings: rank ", r, " sent a malformed record");
    out.emplace_back(reinterpret_cast<const char*>(rec + 1), std::size_t(rec[0]));
  }
  return out;
}

NodePlace place_on_node(const std::vector<std::string>& hosts, int rank) {
  require(rank >= 0 && std::size_t(rank) < hosts.size(), "place_on_node: rank ", rank,
          " is outside the ", hosts.size(), " ranks");
  NodePlace p;
  p.local_size = 0;
  for (int r = 0; r < int(hosts.size()); ++r) {
    if (hosts[std::size_t(r)] != hosts[std::size_t(rank)]) continue;
    if (r < rank) ++p.local_rank;
    ++p.local_size;
    p.ranks.push_back(r);
  }
  return p;
}

}  // namespace wiola::comm
