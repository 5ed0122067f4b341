#pragma once
// How a run whose buffers live on a device gets its groups. A process that
// can talk between devices directly (the CUDA plugin, with NCCL) installs a
// maker at start; without one, the trainer's groups are MPI's, which stage
// device buffers through host memory. The trainer asks here instead of
// knowing whether NCCL was built in.
#include <iosfwd>
#include <memory>

#include "comm/communicator.hpp"
#include "comm/device_transport.hpp"
#include "comm/process_grid.hpp"

namespace wiola::comm {

struct DeviceGroups {
  GridGroups groups;
  // Over all ranks, for device-buffer collectives of the whole world (the
  // step's norm and loss); nullptr when the world chose MPI: use `world`.
  std::unique_ptr<Communicator> world;
  GridTransports plan;
};

// Collective over `world`; `compute_stream` is the backend's native stream;
// rank 0 writes its one-line choice to `log` when given.
using DeviceGroupsMaker = DeviceGroups (*)(Communicator& world, const ProcessGrid& grid,
                                           void* compute_stream, std::ostream* log);

void install_device_groups_maker(DeviceGroupsMaker maker);
// The installed maker, or null when this process has none.
DeviceGroupsMaker device_groups_maker();

}  // namespace wiola::comm
