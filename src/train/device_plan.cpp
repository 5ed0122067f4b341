#include "train/device_plan.hpp"

#include <map>
#include <sstream>

#include "core/error.hpp"

namespace wiola {

namespace {

bool parse_int(const char* text, int& out) {
  if (!text || !*text) return false;
  std::istringstream in(text);
  return (in >> out) && in.eof();
}

}  // namespace

std::vector<std::string> visible_devices(const char* env, int cuda_count) {
  std::vector<std::string> out;
  if (!env) {
    for (int i = 0; i < cuda_count; ++i) out.push_back(std::to_string(i));
    return out;
  }
  std::istringstream in(env);
  for (std::string entry; std::getline(in, entry, ',');)
    if (!entry.empty()) out.push_back(entry);
  if (cuda_count > 0 && int(out.size()) > cuda_count) out.resize(std::size_t(cuda_count));
  return out;
}

std::string DeviceSlot::describe() const {
  std::string s = "rank " + std::to_string(rank) + " on host " + host + ": local rank " +
                  std::to_string(local_rank) + " of " + std::to_string(local_size) + ", ";
  if (index < 0) return s + "no device visible";
  return s + "device " + device + " (" + std::to_string(index + 1) + " of " +
         std::to_string(visible) + " visible)";
}

std::string DeviceSlot::encode() const {
  std::ostringstream os;
  os << rank << ' ' << local_rank << ' ' << local_size << ' ' << index << ' ' << visible << ' '
     << device.size() << ' ' << id.size() << ' ' << device << id << host;
  return os.str();
}

DeviceSlot DeviceSlot::decode(const std::string& text) {
  std::istringstream in(text);
  DeviceSlot s;
  std::size_t device_size = 0, id_size = 0;
  in >> s.rank >> s.local_rank >> s.local_size >> s.index >> s.visible >> device_size >> id_size;
  require(bool(in) && in.get() == ' ', "device plan: a malformed record '", text, "'");
  const std::string rest(std::istreambuf_iterator<char>(in), {});
  require(rest.size() >= device_size + id_size, "device plan: a malformed record '", text, "'");
  s.device = rest.substr(0, device_size);
  s.id = rest.substr(device_size, id_size);
  s.host = rest.substr(device_size + id_size);
  return s;
}

DeviceSlot device_slot(int rank, const std::string& host, const comm::NodePlace& place,
                       const std::vector<std::string>& visible,
                       const std::function<std::string(int)>& uuid_of) {
  DeviceSlot s;
  s.rank = rank;
  s.host = host;
  s.local_rank = place.local_rank;
  s.local_size = place.local_size;
  s.visible = int(visible.size());
  if (!visible.empty()) {
    s.index = place.local_rank % s.visible;
    s.device = visible[std::size_t(s.index)];
    s.id = uuid_of ? uuid_of(s.index) : s.device;
  }
  return s;
}

void check_device_sharing(std::span<const DeviceSlot> slots, bool allow_shared) {
  if (allow_shared) return;
  std::map<std::pair<std::string, std::string>, int> first;  // (host, device) -> rank
  for (const DeviceSlot& s : slots) {
    if (s.index < 0) continue;
    const auto [it, fresh] = first.try_emplace({s.host, s.id}, s.rank);
    if (fresh) continue;
    fail("ranks ", it->second, " and ", s.rank, " on host ", s.host, " would share device ",
         s.device, s.id != s.device ? " (" + s.id + ")" : std::string(), ": ", s.local_size,
         " ranks run there and each sees ", s.visible, " device", s.visible == 1 ? "" : "s",
         " (CUDA_VISIBLE_DEVICES); launch at most one rank per GPU (srun --gpus-per-task=1, "
         "or as many tasks per node as GPUs), or pass --allow-shared-device to share them");
  }
}

void check_slurm_local_id(const DeviceSlot& slot, int world_size, const char* slurm_procid,
                          const char* slurm_ntasks, const char* slurm_localid) {
  int procid = -1, ntasks = -1, localid = -1;
  // Only where srun started the ranks: under mpirun every rank inherits its
  // daemon's Slurm variables.
  if (!parse_int(slurm_procid, procid) || !parse_int(slurm_ntasks, ntasks) ||
      !parse_int(slurm_localid, localid) || procid != slot.rank || ntasks != world_size)
    return;
  require(localid == slot.local_rank, "rank ", slot.rank, " on host ", slot.host,
          ": SLURM_LOCALID is ", localid, " but it is local rank ", slot.local_rank, " of the ",
          slot.local_size, " ranks with that host name; the device each rank takes would not "
          "be the one Slurm assigned (are two nodes reporting the same host name?)");
}

}  // namespace wiola
