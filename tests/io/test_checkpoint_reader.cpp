// Reading a checkpoint's rank files: HDF5 opens a file that lies about its
// datasets, so the reader checks a dataset's shape against the manifest
// before it allocates or reads anything by it.
#include <gtest/gtest.h>

#include <vector>

#include "io/checkpoint_io.hpp"
#include "io/h5.hpp"
#include "io_test_util.hpp"
#include "support/hollow_dataset.hpp"

namespace wiola {
namespace {

CheckpointManifest one_piece(const std::string& file) {
  CheckpointManifest m;
  m.pieces.push_back({"w", StateKind::Param, 2, 2, 0, 4, file, "w.param"});
  return m;
}

TEST(CheckpointReader, ReadsAPieceOfTheLengthTheManifestSays) {
  test::TempDir dir;
  h5::File::create(dir.file("rank-00000.h5")).write<double>("w.param", {4}, std::vector<double>{1, 2, 3, 4});
  const CheckpointManifest m = one_piece("rank-00000.h5");
  CheckpointReader r(dir.path().string(), m);
  std::vector<double> out(4);
  r.read("w", StateKind::Param, 2, 2, 0, 4, out.data());
  EXPECT_EQ(out, (std::vector<double>{1, 2, 3, 4}));
}

TEST(CheckpointReader, ADatasetOfAnotherLengthIsRefusedBeforeItIsRead) {
  test::TempDir dir;
  // 10^12 values declared, none stored: reading it whole would ask for 8 TB.
  h5::File::create(dir.file("rank-00000.h5"));
  test::add_hollow_dataset(dir.file("rank-00000.h5"), "w.param", 1'000'000'000'000ull, H5T_IEEE_F64LE);
  const CheckpointManifest m = one_piece("rank-00000.h5");
  CheckpointReader r(dir.path().string(), m);
  std::vector<double> out(4);
  EXPECT_ERROR(r.read("w", StateKind::Param, 2, 2, 0, 4, out.data()),
               "rank-00000.h5: dataset 'w.param' has shape [1000000000000], the manifest says 4 values");
}

}  // namespace
}  // namespace wiola
