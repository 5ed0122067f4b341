#pragma once
// Which transport carries a group's device buffers: NCCL when every member
// drives its own GPU, MPI with host staging otherwise. NCCL does not allow two
// ranks of one communicator on the same GPU (it hangs or fails), so a group
// whose members share a device falls back to MPI. The decision is a pure
// function of the members' device identities, gathered once over MPI; every
// member computes it from the same input, so all agree without a vote.
//
// Nothing here needs CUDA or NCCL: the NCCL build fills in the identities
// (comm/nccl_communicator.hpp), and the logic is tested in every build.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/process_grid.hpp"

namespace wiola::comm {

// The GPU a rank drives: the host it runs on and the PCI bus id of its
// current CUDA device ("0000:3B:00.0"); an empty bus id means no device.
// Ordinals are no identity: with CUDA_VISIBLE_DEVICES every rank may call
// its GPU device 0.
struct DeviceIdentity {
  std::string host;
  std::string pci_bus_id;
  friend bool operator==(const DeviceIdentity&, const DeviceIdentity&) = default;
};

enum class Transport { Nccl, Mpi };
std::string_view transport_name(Transport t);  // "nccl", "mpi"

struct TransportChoice {
  Transport transport = Transport::Mpi;
  std::string reason;  // "every rank has its own GPU", "world ranks 0 and 2 share GPU ..."
};

// ids[r] is group rank r's identity; world_ranks[r] (when given) its world
// rank, used in the reason. NCCL when the group has one rank or every member
// has a device of its own; MPI when a member has no device, or when two
// members share one (the lowest such pair is named).
TransportChoice choose_transport(std::span<const DeviceIdentity> ids,
                                 std::span<const int> world_ranks = {});

// Every member's identity, in group rank order. Collective over `group`
// (host memory, so any host-capable communicator works).
std::vector<DeviceIdentity> gather_identities(Communicator& group, const DeviceIdentity& mine);

// The world ranks of each group make_groups() builds, in group rank order.
std::vector<int> pipeline_members(const ProcessGrid& grid, int dp_index);
std::vector<int> data_members(const ProcessGrid& grid, int stage);
std::vector<int> embedding_members(const ProcessGrid& grid, int dp_index);

// The choice for every group of the grid, from every world rank's identity
// (world_ids[r] = world rank r); grid.world_rank does not matter.
struct GridTransports {
  TransportChoice world;
  std::vector<TransportChoice> pipeline;   // index dp_index
  std::vector<TransportChoice> data;       // index stage
  std::vector<TransportChoice> embedding;  // index dp_index
};
GridTransports plan_grid_transports(std::span<const DeviceIdentity> world_ids,
                                    const ProcessGrid& grid);

// The one line rank 0 prints at start, e.g.
//   "comm: device buffers over NCCL 2.28.9 on world, pipeline, data, embedding"
//   "comm: device buffers over MPI with host staging on world, pipeline, data, embedding
//    (world ranks 0 and 1 share GPU 0000:3B:00.0 on host n1)"
// Group kinds whose groups chose differently say how many of each.
std::string describe_transports(const GridTransports& plan, std::string_view nccl_version);

}  // namespace wiola::comm
