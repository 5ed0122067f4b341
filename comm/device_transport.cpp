// The transport decision for device buffers, and its one line at start.
#include "comm/device_transport.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/error.hpp"

namespace wiola::comm {

namespace {

constexpr const char* kOneRank = "one rank";

// The record gather_identities() moves: fixed sizes, whole I32 words.
constexpr std::size_t kHostBytes = 256, kBusBytes = 64;
constexpr std::size_t kRecordWords = (kHostBytes + kBusBytes) / 4;

int world_rank_of(std::span<const int> world_ranks, std::size_t r) {
  return world_ranks.empty() ? static_cast<int>(r) : world_ranks[r];
}

std::string ranks_word(std::span<const int> world_ranks) {
  return world_ranks.empty() ? "ranks" : "world ranks";
}

}  // namespace

std::string_view transport_name(Transport t) { return t == Transport::Nccl ? "nccl" : "mpi"; }

TransportChoice choose_transport(std::span<const DeviceIdentity> ids,
                                 std::span<const int> world_ranks) {
  require(world_ranks.empty() || world_ranks.size() == ids.size(), "choose_transport: ",
          world_ranks.size(), " world ranks for ", ids.size(), " identities");
  if (ids.size() <= 1) return {Transport::Mpi, kOneRank};
  for (std::size_t r = 0; r < ids.size(); ++r)
    if (ids[r].pci_bus_id.empty())
      return {Transport::Mpi, (world_ranks.empty() ? "rank " : "world rank ") +
                                  std::to_string(world_rank_of(world_ranks, r)) + " has no GPU"};
  // The lowest pair (a, b), a < b, on one device: a group is small, so the
  // quadratic scan is fine and names the pair deterministically.
  for (std::size_t b = 1; b < ids.size(); ++b)
    for (std::size_t a = 0; a < b; ++a)
      if (ids[a] == ids[b])
        return {Transport::Mpi, ranks_word(world_ranks) + " " +
                                    std::to_string(world_rank_of(world_ranks, a)) + " and " +
                                    std::to_string(world_rank_of(world_ranks, b)) +
                                    " share GPU " + ids[a].pci_bus_id + " on host " + ids[a].host};
  return {Transport::Nccl, "every rank has its own GPU"};
}

std::vector<DeviceIdentity> gather_identities(Communicator& group, const DeviceIdentity& mine) {
  std::vector<std::int32_t> record(kRecordWords, 0);
  auto* bytes = reinterpret_cast<char*>(record.data());
  std::memcpy(bytes, mine.host.data(), std::min(mine.host.size(), kHostBytes - 1));
  std::memcpy(bytes + kHostBytes, mine.pci_bus_id.data(),
              std::min(mine.pci_bus_id.size(), kBusBytes - 1));
  const std::size_t n = static_cast<std::size_t>(group.size());
  std::vector<std::int32_t> all(n * kRecordWords);
  const std::vector<std::size_t> counts(n, kRecordWords);
  group.allgather(record.data(), all.data(), counts, DType::I32);
  std::vector<DeviceIdentity> out(n);
  for (std::size_t r = 0; r < n; ++r) {
    const char* p = reinterpret_cast<const char*>(all.data() + r * kRecordWords);
    out[r].host.assign(p, strnlen(p, kHostBytes));
    out[r].pci_bus_id.assign(p + kHostBytes, strnlen(p + kHostBytes, kBusBytes));
  }
  return out;
}

std::vector<int> pipeline_members(const ProcessGrid& grid, int dp_index) {
  std::vector<int> m;
  for (int s = 0; s < grid.pp; ++s) m.push_back(grid.rank_of(s, dp_index));
  return m;
}

std::vector<int> data_members(const ProcessGrid& grid, int stage) {
  std::vector<int> m;
  for (int j = 0; j < grid.dp; ++j) m.push_back(grid.rank_of(stage, j));
  return m;
}

std::vector<int> embedding_members(const ProcessGrid& grid, int dp_index) {
  // make_groups(): the first stage is rank 0, the last stage rank 1.
  std::vector<int> m{grid.rank_of(0, dp_index)};
  if (grid.pp > 1) m.push_back(grid.rank_of(grid.pp - 1, dp_index));
  return m;
}

GridTransports plan_grid_transports(std::span<const DeviceIdentity> world_ids,
                                    const ProcessGrid& grid) {
  require(static_cast<int>(world_ids.size()) == grid.world_size(), "plan_grid_transports: ",
          world_ids.size(), " identities for a grid of ", grid.world_size(), " ranks");
  auto choose = [&](const std::vector<int>& members) {
    std::vector<DeviceIdentity> ids;
    for (int w : members) ids.push_back(world_ids[static_cast<std::size_t>(w)]);
    return choose_transport(ids, members);
  };
  GridTransports plan;
  std::vector<int> all(world_ids.size());
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int>(r);
  plan.world = choose(all);
  for (int j = 0; j < grid.dp; ++j) {
    plan.pipeline.push_back(choose(pipeline_members(grid, j)));
    plan.embedding.push_back(choose(embedding_members(grid, j)));
  }
  for (int s = 0; s < grid.pp; ++s) plan.data.push_back(choose(data_members(grid, s)));
  return plan;
}

std::string describe_transports(const GridTransports& plan, std::string_view nccl_version) {
  struct Kind {
    const char* name;
    std::vector<const TransportChoice*> groups;
  };
  std::vector<Kind> kinds{{"world", {&plan.world}}, {"pipeline", {}}, {"data", {}},
                          {"embedding", {}}};
  for (const auto& c : plan.pipeline) kinds[1].groups.push_back(&c);
  for (const auto& c : plan.data) kinds[2].groups.push_back(&c);
  for (const auto& c : plan.embedding) kinds[3].groups.push_back(&c);

  // Three lists: kinds on NCCL, kinds on MPI for a reason (a shared GPU, a
  // rank without one: the first such reason is shown), and kinds on MPI only
  // because their groups have one rank.
  std::string nccl, mpi, single, reason;
  auto append = [](std::string& to, const std::string& s) {
    if (!to.empty()) to += ", ";
    to += s;
  };
  for (const Kind& k : kinds) {
    std::size_t n_nccl = 0, n_single = 0;
    for (const TransportChoice* c : k.groups) {
      if (c->transport == Transport::Nccl)
        ++n_nccl;
      else if (c->reason == kOneRank)
        ++n_single;
      else if (reason.empty())
        reason = c->reason;
    }
    const std::size_t total = k.groups.size(), n_mpi = total - n_nccl - n_single;
    auto label = [&](std::size_t n) {
      return n == total ? std::string(k.name)
                        : std::string(k.name) + " (" + std::to_string(n) + " of " +
                              std::to_string(total) + " groups)";
    };
    if (n_nccl) append(nccl, label(n_nccl));
    if (n_mpi) append(mpi, label(n_mpi));
    if (n_single) append(single, label(n_single));
  }
  std::string staged;
  if (!mpi.empty()) staged = mpi + " (" + reason + ")";
  if (!single.empty()) append(staged, single + " (" + kOneRank + ")");
  std::string line = "comm: device buffers over ";
  if (!nccl.empty()) line += "NCCL " + std::string(nccl_version) + " on " + nccl;
  if (!nccl.empty() && !staged.empty()) line += "; over ";
  if (!staged.empty()) line += "MPI with host staging on " + staged;
  return line;
}

}  // namespace wiola::comm
