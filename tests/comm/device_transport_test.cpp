// The transport decision for device buffers (NCCL, or MPI with staging when
// ranks share a GPU), its line at start, and the shard geometry of uneven
// collectives: pure logic, tested in every build.
#include "comm/device_transport.hpp"

#include <gtest/gtest.h>

#include "comm/shard_layout.hpp"
#include "core/error.hpp"

namespace wiola::comm {
namespace {

DeviceIdentity gpu(const std::string& host, const std::string& bus) { return {host, bus}; }

TEST(commTransport, OwnGpuPerRankIsNccl) {
  const std::vector<DeviceIdentity> ids{gpu("n1", "0000:01:00.0"), gpu("n1", "0000:41:00.0"),
                                        gpu("n2", "0000:01:00.0"), gpu("n2", "0000:41:00.0")};
  const TransportChoice c = choose_transport(ids);
  EXPECT_EQ(c.transport, Transport::Nccl);
  EXPECT_EQ(c.reason, "every rank has its own GPU");
  EXPECT_EQ(transport_name(c.transport), "nccl");
}

TEST(commTransport, SameBusIdOnAnotherHostIsAnotherGpu) {
  const std::vector<DeviceIdentity> ids{gpu("n1", "0000:01:00.0"), gpu("n2", "0000:01:00.0")};
  EXPECT_EQ(choose_transport(ids).transport, Transport::Nccl);
}

TEST(commTransport, SharedGpuFallsBackToMpiNamingTheLowestPair) {
  // Ranks 1 and 3 share first (pair order: by the higher rank, then the lower).
  const std::vector<DeviceIdentity> ids{gpu("n1", "A"), gpu("n1", "B"), gpu("n1", "C"),
                                        gpu("n1", "B"), gpu("n1", "A")};
  const TransportChoice c = choose_transport(ids);
  EXPECT_EQ(c.transport, Transport::Mpi);
  EXPECT_EQ(c.reason, "ranks 1 and 3 share GPU B on host n1");
  EXPECT_EQ(transport_name(c.transport), "mpi");
  // With world ranks, the reason names them.
  const std::vector<int> world{10, 11, 12, 13, 14};
  EXPECT_EQ(choose_transport(ids, world).reason, "world ranks 11 and 13 share GPU B on host n1");
}

TEST(commTransport, EveryRankOnOneGpu) {
  // mpirun -np 4 on a machine with one GPU: every rank picks device 0.
  const std::vector<DeviceIdentity> ids(4, gpu("box", "0000:18:00.0"));
  const TransportChoice c = choose_transport(ids);
  EXPECT_EQ(c.transport, Transport::Mpi);
  EXPECT_EQ(c.reason, "ranks 0 and 1 share GPU 0000:18:00.0 on host box");
}

TEST(commTransport, RankWithoutGpuAndSingleRank) {
  const std::vector<DeviceIdentity> ids{gpu("n1", "A"), gpu("n1", "")};
  EXPECT_EQ(choose_transport(ids).transport, Transport::Mpi);
  EXPECT_EQ(choose_transport(ids).reason, "rank 1 has no GPU");
  const std::vector<DeviceIdentity> one{gpu("n1", "A")};
  EXPECT_EQ(choose_transport(one).transport, Transport::Mpi);
  EXPECT_EQ(choose_transport(one).reason, "one rank");
  const std::vector<int> two_ranks{0, 1, 2};
  EXPECT_THROW(choose_transport(ids, two_ranks), Error);
}

TEST(commTransport, GroupMembersFollowMakeGroups) {
  const ProcessGrid g = ProcessGrid::make(6, 3, 2, 0);  // ranks = stage * 2 + dp_index
  EXPECT_EQ(pipeline_members(g, 1), (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(data_members(g, 2), (std::vector<int>{4, 5}));
  EXPECT_EQ(embedding_members(g, 0), (std::vector<int>{0, 4}));
  const ProcessGrid flat = ProcessGrid::make(2, 1, 2, 0);
  EXPECT_EQ(embedding_members(flat, 1), (std::vector<int>{1}));
}

TEST(commTransport, GridPlanDecidesEachGroupFromItsMembers) {
  // pp 2 x dp 2 on two GPUs with world ranks 0 and 2 on A, 1 and 3 on B: the
  // data groups {0,1} and {2,3} span both GPUs, the pipeline groups {0,2} and
  // {1,3} (and the embedding groups, the same ranks) each sit on one.
  const std::vector<DeviceIdentity> ids{gpu("h", "A"), gpu("h", "B"), gpu("h", "A"),
                                        gpu("h", "B")};
  const ProcessGrid g = ProcessGrid::make(4, 2, 2, 0);
  const GridTransports p = plan_grid_transports(ids, g);
  EXPECT_EQ(p.world.transport, Transport::Mpi);
  EXPECT_EQ(p.world.reason, "world ranks 0 and 2 share GPU A on host h");
  ASSERT_EQ(p.data.size(), 2u);
  EXPECT_EQ(p.data[0].transport, Transport::Nccl);
  EXPECT_EQ(p.data[1].transport, Transport::Nccl);
  ASSERT_EQ(p.pipeline.size(), 2u);
  EXPECT_EQ(p.pipeline[1].transport, Transport::Mpi);
  EXPECT_EQ(p.pipeline[1].reason, "world ranks 1 and 3 share GPU B on host h");
  EXPECT_EQ(p.embedding[0].transport, Transport::Mpi);  // = the pipeline group when pp is 2
  EXPECT_EQ(describe_transports(p, "2.28.9"),
            "comm: device buffers over NCCL 2.28.9 on data; over MPI with host staging on "
            "world, pipeline, embedding (world ranks 0 and 2 share GPU A on host h)");
  EXPECT_THROW(plan_grid_transports(std::span(ids).first(3), g), Error);
}

TEST(commTransport, OneLineForTheUsualCases) {
  const ProcessGrid g = ProcessGrid::make(4, 2, 2, 0);
  const std::vector<DeviceIdentity> own{gpu("h", "A"), gpu("h", "B"), gpu("h", "C"),
                                        gpu("h", "D")};
  EXPECT_EQ(describe_transports(plan_grid_transports(own, g), "2.28.9"),
            "comm: device buffers over NCCL 2.28.9 on world, pipeline, data, embedding");
  const std::vector<DeviceIdentity> shared(4, gpu("h", "A"));
  EXPECT_EQ(describe_transports(plan_grid_transports(shared, g), "2.28.9"),
            "comm: device buffers over MPI with host staging on world, pipeline, data, "
            "embedding (world ranks 0 and 1 share GPU A on host h)");
  // pp 1 x dp 2 on two GPUs: the one-stage pipeline and embedding groups
  // have one rank each and need no transport of their own.
  const ProcessGrid flat = ProcessGrid::make(2, 1, 2, 0);
  EXPECT_EQ(describe_transports(plan_grid_transports(std::span(own).first(2), flat), "2.28.9"),
            "comm: device buffers over NCCL 2.28.9 on world, data; over MPI with host staging "
            "on pipeline, embedding (one rank)");
  // Mixed within a kind: pp 2 x dp 2 where only stage 1's two replicas share
  // a GPU, so one data group is on NCCL and the other on MPI.
  const std::vector<DeviceIdentity> half{gpu("h", "A"), gpu("h", "B"), gpu("h", "C"),
                                         gpu("h", "C")};
  EXPECT_EQ(describe_transports(plan_grid_transports(half, g), "2.28.9"),
            "comm: device buffers over NCCL 2.28.9 on pipeline, data (1 of 2 groups), "
            "embedding; over MPI with host staging on world, data (1 of 2 groups) (world ranks "
            "2 and 3 share GPU C on host h)");
}

TEST(commShards, EvenAndUnevenLayouts) {
  const std::vector<std::size_t> even{3, 3, 3};
  const ShardLayout e(even);
  EXPECT_TRUE(e.even);
  EXPECT_EQ(e.total, 9u);
  EXPECT_EQ(e.offsets, (std::vector<std::size_t>{0, 3, 6}));
  EXPECT_EQ(e.roots(), (std::vector<int>{0, 1, 2}));

  // ZeRO's split of 10 elements over 4 ranks: shards differ by one.
  const std::vector<std::size_t> zero{2, 3, 2, 3};
  const ShardLayout z(zero);
  EXPECT_FALSE(z.even);
  EXPECT_EQ(z.offsets, (std::vector<std::size_t>{0, 2, 5, 7}));
  EXPECT_EQ(z.total, 10u);

  // A ZeRO-2 bucket inside one or two shards: empty shards are no roots.
  const std::vector<std::size_t> bucket{0, 5, 7, 0};
  const ShardLayout b(bucket);
  EXPECT_FALSE(b.even);
  EXPECT_EQ(b.roots(), (std::vector<int>{1, 2}));
  EXPECT_EQ(b.offsets, (std::vector<std::size_t>{0, 0, 5, 12}));

  const std::vector<std::size_t> none{0, 0};
  const ShardLayout n(none);
  EXPECT_TRUE(n.even);
  EXPECT_TRUE(n.roots().empty());
  EXPECT_EQ(n.total, 0u);
}

}  // namespace
}  // namespace wiola::comm
