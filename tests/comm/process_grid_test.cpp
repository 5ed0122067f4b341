// ProcessGrid arithmetic and its refusal of a mismatched world size.
#include "comm/process_grid.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace wiola::comm {
namespace {

TEST(commGrid, LayoutPutsDataParallelPeersNextToEachOther) {
  // pp 2 x dp 3: world ranks 0 1 2 are stage 0, ranks 3 4 5 stage 1.
  for (int r = 0; r < 6; ++r) {
    const ProcessGrid g = ProcessGrid::make(6, 2, 3, r);
    EXPECT_EQ(g.stage(), r / 3);
    EXPECT_EQ(g.dp_index(), r % 3);
    EXPECT_EQ(g.rank_of(g.stage(), g.dp_index()), r);
    EXPECT_EQ(g.first_stage(), r < 3);
    EXPECT_EQ(g.last_stage(), r >= 3);
    EXPECT_TRUE(g.in_embedding_group());
  }
  const ProcessGrid g = ProcessGrid::make(8, 4, 2, 5);
  EXPECT_EQ(g.stage(), 2);
  EXPECT_EQ(g.dp_index(), 1);
  EXPECT_EQ(g.rank_of(3, 1), 7);  // pipeline neighbours are dp = 2 ranks apart
  EXPECT_EQ(g.rank_of(1, 1), 3);
  EXPECT_FALSE(g.in_embedding_group());
  EXPECT_EQ(g.world_size(), 8);
  EXPECT_EQ(g.describe(), "pp 4 x dp 2: world rank 5 = stage 2, dp index 1");
}

TEST(commGrid, OneStageAndOneReplica) {
  const ProcessGrid a = ProcessGrid::make(4, 1, 4, 2);
  EXPECT_EQ(a.stage(), 0);
  EXPECT_EQ(a.dp_index(), 2);
  EXPECT_TRUE(a.first_stage() && a.last_stage());
  const ProcessGrid b = ProcessGrid::make(4, 4, 1, 2);
  EXPECT_EQ(b.stage(), 2);
  EXPECT_EQ(b.dp_index(), 0);
}

TEST(commGrid, RefusesAWorldSizeMismatch) {
  try {
    ProcessGrid::make(3, 2, 2, 0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "world size 3 does not equal --pp 2 × --dp 2 = 4");
  }
  EXPECT_THROW(check_grid(8, 3, 2), Error);
  EXPECT_NO_THROW(check_grid(8, 4, 2));
}

TEST(commGrid, RefusesBadValues) {
  EXPECT_THROW(ProcessGrid::make(4, 0, 4, 0), Error);
  EXPECT_THROW(ProcessGrid::make(4, 4, 0, 0), Error);
  EXPECT_THROW(ProcessGrid::make(4, -2, -2, 0), Error);
  EXPECT_THROW(ProcessGrid::make(4, 2, 2, 4), Error);
  EXPECT_THROW(ProcessGrid::make(4, 2, 2, -1), Error);
}

}  // namespace
}  // namespace wiola::comm
