// Sub-communicators of the process grid for every (pp, dp) that fits the
// world: sizes, ranks, memberships (by world rank) and that they work.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "comm/agreement.hpp"
#include "comm/process_grid.hpp"
#include "core/error.hpp"
#include "mpi_test_env.hpp"

namespace wiola::comm::test {
namespace {

// World ranks of `c`'s members, in its rank order.
std::vector<std::int32_t> members(Communicator& c) {
  std::int32_t me = world().rank();
  std::vector<std::size_t> counts(c.size(), 1);
  std::vector<std::int32_t> all(c.size());
  c.allgather(&me, all.data(), counts, DType::I32);
  return all;
}

void check_grid(int pp, int dp) {
  SCOPED_TRACE("pp " + std::to_string(pp) + " dp " + std::to_string(dp));
  auto& w = world();
  const ProcessGrid g = ProcessGrid::make(w.size(), pp, dp, w.rank());
  GridGroups groups = make_groups(w, g);

  ASSERT_TRUE(groups.pipeline && groups.data);
  EXPECT_EQ(groups.pipeline->name(), "pipeline");
  EXPECT_EQ(groups.pipeline->size(), pp);
  EXPECT_EQ(groups.pipeline->rank(), g.stage());
  std::vector<std::int32_t> want;
  for (int s = 0; s < pp; ++s) want.push_back(g.rank_of(s, g.dp_index()));
  EXPECT_EQ(members(*groups.pipeline), want);

  EXPECT_EQ(groups.data->name(), "data");
  EXPECT_EQ(groups.data->size(), dp);
  EXPECT_EQ(groups.data->rank(), g.dp_index());
  want.clear();
  for (int d = 0; d < dp; ++d) want.push_back(g.rank_of(g.stage(), d));
  EXPECT_EQ(members(*groups.data), want);

  if (!g.in_embedding_group()) {
    EXPECT_EQ(groups.embedding, nullptr);
  } else {
    ASSERT_NE(groups.embedding, nullptr);
    EXPECT_EQ(groups.embedding->name(), "embedding");
    want = {g.rank_of(0, g.dp_index())};
    if (pp > 1) want.push_back(g.rank_of(pp - 1, g.dp_index()));
    EXPECT_EQ(groups.embedding->size(), int(want.size()));
    EXPECT_EQ(groups.embedding->rank(), g.first_stage() ? 0 : 1);
    EXPECT_EQ(members(*groups.embedding), want);
  }

  // The groups carry traffic: sum of stages over the data group, of dp
  // indices over the pipeline group.
  EXPECT_EQ(groups.data->allreduce_value<std::int32_t>(g.stage(), ReduceOp::Sum), dp * g.stage());
  EXPECT_EQ(groups.pipeline->allreduce_value<std::int32_t>(g.dp_index(), ReduceOp::Sum),
            pp * g.dp_index());
  if (pp > 1) {
    // Stage s sends its world rank to stage s + 1 on the pipeline group.
    std::int32_t mine = w.rank(), got = -1;
    std::unique_ptr<Request> sq, rq;
    if (!g.last_stage()) sq = groups.pipeline->isend(&mine, 4, g.stage() + 1, 0);
    if (!g.first_stage()) rq = groups.pipeline->irecv(&got, 4, g.stage() - 1, 0);
    if (rq) {
      rq->wait();
      EXPECT_EQ(got, g.rank_of(g.stage() - 1, g.dp_index()));
    }
    if (sq) sq->wait();
  }
}

TEST(mpiGroups, EveryGridOfThisWorld) {
  const int n = world().size();
  for (int pp = 1; pp <= n; ++pp)
    if (n % pp == 0) check_grid(pp, n / pp);  // (2,2), (4,1), (1,4) with 4 ranks
}

TEST(mpiGroups, GroupsInheritTheTimeout) {
  auto& w = world();
  const double saved = w.timeout();
  w.set_timeout(7.5);
  auto sub = w.split(0, w.rank(), "copy");
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(dynamic_cast<MpiCommunicator&>(*sub).timeout(), 7.5);
  w.set_timeout(saved);
}

TEST(mpiGroups, NegativeColorIsNotAMember) {
  auto& w = world();
  auto sub = w.split(w.rank() == 0 ? -1 : 0, 0, "without-0");
  if (w.rank() == 0) {
    EXPECT_EQ(sub, nullptr);
  } else {
    ASSERT_NE(sub, nullptr);
    EXPECT_EQ(sub->size(), w.size() - 1);
    EXPECT_EQ(sub->rank(), w.rank() - 1);
  }
}

TEST(mpiGroups, MismatchedGridIsRefused) {
  auto& w = world();
  EXPECT_THROW(ProcessGrid::make(w.size(), w.size() + 1, 1, w.rank()), Error);
  EXPECT_THROW(ProcessGrid::make(w.size(), 2, w.size(), w.rank()), Error);
}

// An error only some ranks see reaches every rank, as the lowest failing
// rank's message ("rank R: ..." elsewhere), so rank 0 can print it.
TEST(mpiGroups, AgreementCarriesTheLowestFailingRanksMessage) {
  auto& w = world();
  const int last = w.size() - 1;
  std::string got;
  try {
    agree(w, [&] {
      if (w.rank() == last) fail("--save /x: cannot create files in it (rank ", w.rank(), ")");
    });
  } catch (const CollectiveError& e) {
    got = e.what();
  }
  const std::string own = "--save /x: cannot create files in it (rank " + std::to_string(last) + ")";
  EXPECT_EQ(got, w.rank() == last ? own : "rank " + std::to_string(last) + ": " + own);
  // Nobody fails: nothing is thrown.
  EXPECT_NO_THROW(agree(w, [] {}));
  // Rank 0 fails too: its message, everywhere, unprefixed.
  got.clear();
  try {
    agree(w, [&] {
      if (w.rank() == 0 || w.rank() == last) fail("rank ", w.rank(), " refused");
    });
  } catch (const CollectiveError& e) {
    got = e.what();
  }
  EXPECT_EQ(got, "rank 0 refused");
}

}  // namespace
}  // namespace wiola::comm::test
