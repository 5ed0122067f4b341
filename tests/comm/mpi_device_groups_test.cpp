// Multi-rank pieces of the NCCL set-up that need no GPU: the unique-id
// exchange over the MPI communicator of each group, and the gathering of
// device identities on which the transport decision is made.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "comm/device_transport.hpp"
#include "comm/process_grid.hpp"
#include "comm/unique_id.hpp"
#include "mpi_test_env.hpp"

namespace wiola::comm::test {
namespace {

constexpr std::size_t kIdBytes = 128;  // sizeof(ncclUniqueId)

// Random bytes, as ncclGetUniqueId's are (an address, a port and a magic).
void random_id(std::span<std::byte> id) {
  static std::mt19937_64 gen{std::random_device{}()};
  for (std::byte& b : id) b = static_cast<std::byte>(gen() & 0xff);
}

// Every world rank's bytes, in world rank order.
std::vector<std::byte> gather_world(const std::vector<std::byte>& mine) {
  const int n = world().size();
  std::vector<std::int32_t> words(mine.size() / 4);
  std::memcpy(words.data(), mine.data(), mine.size());
  std::vector<std::int32_t> all(words.size() * n);
  const std::vector<std::size_t> counts(n, words.size());
  world().allgather(words.data(), all.data(), counts, DType::I32);
  std::vector<std::byte> out(all.size() * 4);
  std::memcpy(out.data(), all.data(), out.size());
  return out;
}

TEST(mpiUniqueId, OneMakerPerGroupAndTheSameBytesOnEveryMember) {
  auto& w = world();
  int made = 0;
  const auto ids = exchange_unique_ids(w, 3, kIdBytes, [&](std::span<std::byte> id) {
    ++made;
    random_id(id);
  });
  EXPECT_EQ(made, w.rank() == 0 ? 3 : 0);
  ASSERT_EQ(ids.size(), 3 * kIdBytes);
  // Three distinct ids, identical on every rank.
  EXPECT_NE(std::memcmp(ids.data(), ids.data() + kIdBytes, kIdBytes), 0);
  const auto all = gather_world(ids);
  for (int r = 1; r < w.size(); ++r)
    EXPECT_EQ(std::memcmp(all.data(), all.data() + r * ids.size(), ids.size()), 0) << "rank " << r;
}

TEST(mpiUniqueId, EqualWithinAGroupAndDifferentBetweenGroups) {
  auto& w = world();
  // Two groups of the world (even and odd ranks); each makes its own id on
  // its rank 0 (world ranks 0 and 1) and broadcasts it over its MPI group.
  auto group = w.split(w.rank() % 2, w.rank(), "half");
  ASSERT_TRUE(group);
  const auto id = exchange_unique_ids(*group, 1, kIdBytes, random_id);
  const auto all = gather_world(id);
  for (int a = 0; a < w.size(); ++a)
    for (int b = a + 1; b < w.size(); ++b) {
      const bool same =
          std::memcmp(all.data() + a * kIdBytes, all.data() + b * kIdBytes, kIdBytes) == 0;
      EXPECT_EQ(same, a % 2 == b % 2) << "world ranks " << a << " and " << b;
    }
}

TEST(mpiUniqueId, EveryGroupOfAGrid) {
  auto& w = world();
  if (w.size() % 2 != 0) GTEST_SKIP() << "needs an even world";
  const ProcessGrid g = ProcessGrid::make(w.size(), 2, w.size() / 2, w.rank());
  GridGroups groups = make_groups(w, g);
  const auto pipe = exchange_unique_ids(*groups.pipeline, 1, kIdBytes, random_id);
  const auto data = exchange_unique_ids(*groups.data, 1, kIdBytes, random_id);
  const auto all_pipe = gather_world(pipe), all_data = gather_world(data);
  auto id_of = [](const std::vector<std::byte>& all, int r) { return all.data() + r * kIdBytes; };
  for (int a = 0; a < w.size(); ++a)
    for (int b = 0; b < w.size(); ++b) {
      const ProcessGrid ga = ProcessGrid::make(w.size(), 2, w.size() / 2, a);
      const ProcessGrid gb = ProcessGrid::make(w.size(), 2, w.size() / 2, b);
      EXPECT_EQ(std::memcmp(id_of(all_pipe, a), id_of(all_pipe, b), kIdBytes) == 0,
                ga.dp_index() == gb.dp_index());
      EXPECT_EQ(std::memcmp(id_of(all_data, a), id_of(all_data, b), kIdBytes) == 0,
                ga.stage() == gb.stage());
    }
}

TEST(mpiDeviceIdentity, GatheredInGroupOrderAndDecidedAlike) {
  auto& w = world();
  // Pretend ranks 2k and 2k+1 share GPU "bus-k" on this host.
  const DeviceIdentity mine{"host-x", "bus-" + std::to_string(w.rank() / 2)};
  const auto ids = gather_identities(w, mine);
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(w.size()));
  for (int r = 0; r < w.size(); ++r) {
    EXPECT_EQ(ids[r].host, "host-x");
    EXPECT_EQ(ids[r].pci_bus_id, "bus-" + std::to_string(r / 2));
  }
  const TransportChoice c = choose_transport(ids);
  EXPECT_EQ(c.transport, Transport::Mpi);
  EXPECT_EQ(c.reason, "ranks 0 and 1 share GPU bus-0 on host host-x");
  // A long host name is cut, not overflowed; an empty bus id survives as empty.
  const DeviceIdentity odd{std::string(400, 'h'), ""};
  const auto cut = gather_identities(w, odd);
  EXPECT_EQ(cut[0].host, std::string(255, 'h'));
  EXPECT_EQ(cut[0].pci_bus_id, "");
  EXPECT_EQ(choose_transport(cut).reason, "rank 0 has no GPU");
}

}  // namespace
}  // namespace wiola::comm::test
