// make_device_groups(): the grid's groups for a run on CUDA devices, each
// over NCCL or (ranks sharing a GPU) MPI with host staging.
#include <cstring>
#include <ostream>

#include "comm/mpi_internal.hpp"  // detail::identity
#include "comm/nccl_communicator.hpp"
#include "comm/nccl_internal.hpp"
#include "core/error.hpp"

namespace wiola::comm {

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "?";
  // Since 2.9: major * 10000 + minor * 100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

void make_nccl_unique_id(std::span<std::byte> out) {
  require(out.size() == sizeof(ncclUniqueId), "make_nccl_unique_id: ", out.size(),
          " bytes for an id of ", sizeof(ncclUniqueId));
  ncclUniqueId u;
  const ncclResult_t rc = ncclGetUniqueId(&u);
  // Rank 0 alone gets here; the others wait in the broadcast: end them all.
  if (rc != ncclSuccess)
    detail::die("ncclGetUniqueId failed: " + nccl::nccl_error_text(rc, nullptr), kAbortNcclError);
  std::memcpy(out.data(), &u, sizeof u);
}

DeviceIdentity current_device_identity() {
  DeviceIdentity id;
  id.host = detail::identity().host;
  int device = -1;
  char bus[64] = {};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) {
    cudaGetLastError();  // no device: an empty bus id says so
    return id;
  }
  id.pci_bus_id = bus;
  return id;
}

DeviceGroups make_device_groups(Communicator& world, const ProcessGrid& grid,
                                void* compute_stream, std::ostream* log) {
  DeviceGroups out;
  // One gather of every rank's device; each group's choice follows from it
  // alike on every member.
  const std::vector<DeviceIdentity> ids = gather_identities(world, current_device_identity());
  out.plan = plan_grid_transports(ids, grid);
  if (log && world.rank() == 0)
    *log << describe_transports(out.plan, nccl_version()) << "\n" << std::flush;

  // The MPI groups first (they are the NCCL groups' host siblings), then the
  // NCCL communicators, every rank in the same order: world, pipeline, data,
  // embedding. Groups of one kind are disjoint, so the collective set-ups
  // cannot wait on each other.
  GridGroups mpi = make_groups(world, grid);
  NcclOptions o;
  o.compute_stream = compute_stream;
  auto wrap = [&](std::unique_ptr<Communicator> host, const TransportChoice& choice,
                  bool channels) -> std::unique_ptr<Communicator> {
    if (!host || choice.transport == Transport::Mpi) return host;
    NcclOptions oc = o;
    oc.neighbour_channels = channels;
    return std::make_unique<NcclCommunicator>(std::move(host), oc);
  };
  if (out.plan.world.transport == Transport::Nccl)  // the same on every rank
    out.world = wrap(world.split(0, world.rank(), "world"), out.plan.world, false);
  out.groups.pipeline =
      wrap(std::move(mpi.pipeline), out.plan.pipeline[std::size_t(grid.dp_index())], true);
  out.groups.data = wrap(std::move(mpi.data), out.plan.data[std::size_t(grid.stage())], false);
  out.groups.embedding =
      wrap(std::move(mpi.embedding), out.plan.embedding[std::size_t(grid.dp_index())], false);
  return out;
}

}  // namespace wiola::comm
