#pragma once
// Which device each rank takes. A rank's place on its node (its local rank
// among the ranks with its host name, comm/node_placement.hpp) picks one of
// the devices visible to it: entry (local rank mod count) of
// CUDA_VISIBLE_DEVICES, as Slurm's --gpus-per-node sets it for the job's
// tasks, or of the devices CUDA counts when that is unset. Where Slurm gives
// each task its own GPU (--gpus-per-task, --gpu-bind), every task sees one,
// a different one, which may be named 0 in each task: two ranks share a GPU
// when they are on one host and take the same physical device (its UUID, or
// the name where CUDA cannot say). Refused unless --allow-shared-device.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "comm/node_placement.hpp"

namespace wiola {

// The devices this rank sees, by the names CUDA_VISIBLE_DEVICES gives them
// (indices or GPU-/MIG- identifiers). `env`: that variable's value, null when
// unset; `cuda_count`: the devices the CUDA runtime counts (0 without CUDA).
// Unset: "0" .. cuda_count - 1. Set: its entries, at most cuda_count of them
// when the runtime counts any (it ignores the entries after an invalid one).
std::vector<std::string> visible_devices(const char* env, int cuda_count);

struct DeviceSlot {
  int rank = 0;
  std::string host;
  int local_rank = 0, local_size = 1;
  int index = -1;      // among the visible devices; -1: none visible
  std::string device;  // its name (CUDA_VISIBLE_DEVICES' entry); "" for none
  std::string id;      // its physical identity (the GPU's UUID) where CUDA says, else `device`
  int visible = 0;     // how many this rank sees

  // "rank 3 on host n1: local rank 1 of 2, device 1"
  std::string describe() const;
  // The serialised form gather_strings carries, and back.
  std::string encode() const;
  static DeviceSlot decode(const std::string& text);
};

// `uuid_of(index)`: the GPU's UUID; null where CUDA cannot say (no device,
// or a build without CUDA): the name stands for the device then.
DeviceSlot device_slot(int rank, const std::string& host, const comm::NodePlace& place,
                       const std::vector<std::string>& visible,
                       const std::function<std::string(int)>& uuid_of = nullptr);

// Throws wiola::Error when two ranks of one host would take the same device,
// naming the host, the ranks and the device, unless `allow_shared`.
void check_device_sharing(std::span<const DeviceSlot> slots, bool allow_shared);

// Where srun started this rank itself (SLURM_PROCID is its world rank and
// SLURM_NTASKS the world size), SLURM_LOCALID must be its local rank: throws
// naming both when not. `slurm_*`: the variables' values, null when unset.
void check_slurm_local_id(const DeviceSlot& slot, int world_size, const char* slurm_procid,
                          const char* slurm_ntasks, const char* slurm_localid);

}  // namespace wiola
