#include "comm/device_groups.hpp"

#include <atomic>

namespace wiola::comm {

namespace {
std::atomic<DeviceGroupsMaker> installed{nullptr};
}

void install_device_groups_maker(DeviceGroupsMaker maker) { installed.store(maker); }

DeviceGroupsMaker device_groups_maker() { return installed.load(); }

}  // namespace wiola::comm
