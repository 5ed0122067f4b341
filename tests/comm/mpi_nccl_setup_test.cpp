// The NCCL build's set-up, multi-rank, on any machine (no NCCL collective
// runs here; tests/comm/nccl_check_main.cpp does that on a GPU): real
// ncclUniqueIds exchanged over each group's MPI communicator, this process's
// device identity, and make_device_groups() choosing a transport per group
// -- on a machine without a GPU (or with one GPU for all ranks) every group
// falls back to MPI with host staging, and says so on rank 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "comm/mpi_communicator.hpp"
#include "comm/nccl_communicator.hpp"
#include "comm/unique_id.hpp"
#include "mpi_test_env.hpp"

namespace wiola::comm::test {
namespace {

std::vector<std::byte> gather_world(const std::vector<std::byte>& mine) {
  const int n = world().size();
  std::vector<std::int32_t> words(mine.size() / 4), all(words.size() * n);
  std::memcpy(words.data(), mine.data(), mine.size());
  world().allgather(words.data(), all.data(), std::vector<std::size_t>(n, words.size()),
                    DType::I32);
  std::vector<std::byte> out(all.size() * 4);
  std::memcpy(out.data(), all.data(), out.size());
  return out;
}

TEST(mpiNcclSetup, RealUniqueIdsAreSharedWithinAGroupOnly) {
  auto& w = world();
  auto half = w.split(w.rank() % 2, w.rank(), "half");
  ASSERT_TRUE(half);
  const auto id = exchange_unique_ids(*half, 1, kNcclUniqueIdBytes, make_nccl_unique_id);
  ASSERT_EQ(id.size(), kNcclUniqueIdBytes);
  const auto all = gather_world(id);
  for (int a = 0; a < w.size(); ++a)
    for (int b = a + 1; b < w.size(); ++b) {
      const bool same = std::memcmp(all.data() + a * kNcclUniqueIdBytes,
                                    all.data() + b * kNcclUniqueIdBytes, kNcclUniqueIdBytes) == 0;
      EXPECT_EQ(same, a % 2 == b % 2) << "world ranks " << a << " and " << b;
    }
}

TEST(mpiNcclSetup, VersionAndIdentity) {
  const std::string v = nccl_version();
  EXPECT_EQ(std::count(v.begin(), v.end(), '.'), 2) << v;
  const DeviceIdentity me = current_device_identity();
  EXPECT_FALSE(me.host.empty());
}

TEST(mpiNcclSetup, DeviceGroupsFollowThePlan) {
  auto& w = world();
  const ProcessGrid g = ProcessGrid::make(w.size(), 1, w.size(), w.rank());
  std::ostringstream line;
  DeviceGroups dg = make_device_groups(w, g, nullptr, &line);
  const std::string expected =
      w.rank() == 0 ? describe_transports(dg.plan, nccl_version()) + "\n" : "";
  EXPECT_EQ(line.str(), expected);
  ASSERT_TRUE(dg.groups.pipeline && dg.groups.data && dg.groups.embedding);
  auto is_nccl = [](Communicator& c) { return dynamic_cast<NcclCommunicator*>(&c) != nullptr; };
  EXPECT_EQ(dg.world != nullptr, dg.plan.world.transport == Transport::Nccl);
  EXPECT_EQ(is_nccl(*dg.groups.data), dg.plan.data[0].transport == Transport::Nccl);
  EXPECT_FALSE(is_nccl(*dg.groups.pipeline));  // one stage: a one-rank group
  EXPECT_EQ(dg.groups.data->name(), "data");
  EXPECT_EQ(dg.groups.data->size(), w.size());
  // Host buffers work whichever transport was chosen.
  std::int32_t v = w.rank() + 1;
  dg.groups.data->allreduce(&v, 1, DType::I32, ReduceOp::Sum);
  EXPECT_EQ(v, w.size() * (w.size() + 1) / 2);
  // No GPU here (or several ranks on one): every group fell back to MPI.
  if (current_device_identity().pci_bus_id.empty()) {
    EXPECT_EQ(dg.plan.world.transport, Transport::Mpi);
    if (w.rank() == 0) {
      EXPECT_NE(line.str().find("MPI with host staging"), std::string::npos);
    }
    EXPECT_NE(dynamic_cast<MpiCommunicator*>(dg.groups.data.get()), nullptr);
  }
}

}  // namespace
}  // namespace wiola::comm::test
