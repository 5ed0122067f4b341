// Which device each rank takes (train/device_plan.hpp) and each rank's place
// on its node (comm/node_placement.hpp), on host lists of several nodes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/node_placement.hpp"
#include "core/error.hpp"
#include "train/device_plan.hpp"

namespace wiola {
namespace {

// Every rank's slot, as each rank would compute it from its own view.
std::vector<DeviceSlot> slots_of(const std::vector<std::string>& hosts,
                                 const std::vector<std::vector<std::string>>& visible,
                                 const std::function<std::string(int rank, int index)>& uuid = nullptr) {
  std::vector<DeviceSlot> out;
  for (int r = 0; r < int(hosts.size()); ++r) {
    std::function<std::string(int)> of;
    if (uuid) of = [&, r](int index) { return uuid(r, index); };
    out.push_back(device_slot(r, hosts[std::size_t(r)], comm::place_on_node(hosts, r),
                              visible[std::size_t(r)], of));
  }
  return out;
}

std::string refusal(const std::vector<DeviceSlot>& slots) {
  try {
    check_device_sharing(slots, false);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NodePlacement, RanksOfOneHostAreNumberedByWorldRank) {
  // Three nodes, the ranks spread round-robin (srun --distribution=cyclic).
  const std::vector<std::string> hosts{"n1", "n2", "n3", "n1", "n2", "n3", "n1"};
  const comm::NodePlace p0 = comm::place_on_node(hosts, 0), p6 = comm::place_on_node(hosts, 6),
                        p4 = comm::place_on_node(hosts, 4);
  EXPECT_EQ(p0.local_rank, 0);
  EXPECT_EQ(p0.local_size, 3);
  EXPECT_EQ(p6.local_rank, 2);
  EXPECT_EQ(p6.ranks, (std::vector<int>{0, 3, 6}));
  EXPECT_EQ(p4.local_rank, 1);
  EXPECT_EQ(p4.local_size, 2);
  EXPECT_THROW(comm::place_on_node(hosts, 7), Error);
}

TEST(DevicePlan, VisibleDevicesFollowCudaVisibleDevices) {
  EXPECT_EQ(visible_devices(nullptr, 3), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_TRUE(visible_devices(nullptr, 0).empty());
  EXPECT_EQ(visible_devices("2,3", 0), (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(visible_devices("GPU-a,,GPU-b", 0), (std::vector<std::string>{"GPU-a", "GPU-b"}));
  // The runtime counts fewer (it stops at an invalid entry): the rest are not there.
  EXPECT_EQ(visible_devices("0,1,7", 2), (std::vector<std::string>{"0", "1"}));
  EXPECT_TRUE(visible_devices("", 0).empty());
}

TEST(DevicePlan, EachRankTakesItsLocalRanksDevice) {
  // 2 nodes x 2 tasks, --gpus-per-node=2: every task sees both GPUs of its node.
  const std::vector<std::string> hosts{"n1", "n1", "n2", "n2"};
  const std::vector<std::vector<std::string>> visible(4, {"0", "1"});
  const std::vector<DeviceSlot> s = slots_of(hosts, visible);
  EXPECT_EQ(s[0].device, "0");
  EXPECT_EQ(s[1].device, "1");
  EXPECT_EQ(s[2].device, "0");
  EXPECT_EQ(s[3].device, "1");
  EXPECT_EQ(s[3].describe(), "rank 3 on host n2: local rank 1 of 2, device 1 (2 of 2 visible)");
  EXPECT_EQ(refusal(s), "");
  // Round trip through the form the ranks gather.
  const DeviceSlot back = DeviceSlot::decode(s[3].encode());
  EXPECT_EQ(back.describe(), s[3].describe());
  EXPECT_EQ(back.id, s[3].id);
}

TEST(DevicePlan, TwoRanksOnOneGpuAreRefusedNamingHostAndRanks) {
  // 3 tasks on n2 with its 2 GPUs: local ranks 0 and 2 would both take "0".
  const std::vector<std::string> hosts{"n1", "n2", "n2", "n2"};
  const std::vector<std::vector<std::string>> visible(4, {"0", "1"});
  const std::vector<DeviceSlot> s = slots_of(hosts, visible);
  const std::string why = refusal(s);
  EXPECT_NE(why.find("ranks 1 and 3 on host n2 would share device 0"), std::string::npos) << why;
  EXPECT_NE(why.find("--allow-shared-device"), std::string::npos) << why;
  EXPECT_NO_THROW(check_device_sharing(s, true));
  // No device visible: nothing to share.
  EXPECT_EQ(refusal(slots_of(hosts, std::vector<std::vector<std::string>>(4))), "");
}

TEST(DevicePlan, OneGpuPerTaskIsNotSharingEvenWhenEachCallsIt0) {
  // srun --gpus-per-task=1 with device cgroups: every task sees one GPU and
  // calls it 0, but they are different GPUs, as their UUIDs say.
  const std::vector<std::string> hosts{"n1", "n1"};
  const std::vector<std::vector<std::string>> visible(2, {"0"});
  const auto uuid = [](int rank, int) { return "GPU-" + std::to_string(rank); };
  EXPECT_EQ(refusal(slots_of(hosts, visible, uuid)), "");
  // The same GPU given to both (same UUID) is sharing, and the message shows the UUID.
  const std::string why = refusal(slots_of(hosts, visible, [](int, int) { return "GPU-x"; }));
  EXPECT_NE(why.find("ranks 0 and 1 on host n1 would share device 0 (GPU-x)"), std::string::npos)
      << why;
}

TEST(DevicePlan, SlurmLocalIdMustAgreeWhereSrunStartedTheRank) {
  const std::vector<std::string> hosts{"n1", "n1"};
  const DeviceSlot s = slots_of(hosts, {{"0", "1"}, {"0", "1"}})[1];
  EXPECT_NO_THROW(check_slurm_local_id(s, 2, "1", "2", "1"));
  try {
    check_slurm_local_id(s, 2, "1", "2", "0");
    ADD_FAILURE() << "a SLURM_LOCALID that disagrees was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 on host n1: SLURM_LOCALID is 0 but it is local rank 1"),
              std::string::npos)
        << e.what();
  }
  // Under mpirun every rank inherits its daemon's variables: not checked.
  EXPECT_NO_THROW(check_slurm_local_id(s, 2, "0", "1", "0"));
  EXPECT_NO_THROW(check_slurm_local_id(s, 2, nullptr, nullptr, nullptr));
}

}  // namespace
}  // namespace wiola
