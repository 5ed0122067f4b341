// Reading a checkpoint's rank files: HDF5 opens a file that lies about its
// datasets, so the reader checks a dataset's shape against the manifest
// before it allocates or reads anything by it.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <vector>

#include "io/checkpoint_io.hpp"
#include "io/h5.hpp"
#include "io_test_util.hpp"

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
  {
    const std::string path = dir.file("rank-00000.h5");
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t n = 1'000'000'000'000ull, chunk = 1024;
    const hid_t space = H5Screate_simple(1, &n, nullptr), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Dclose(H5Dcreate2(file, "w.param", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(file);
  }
  const CheckpointManifest m = one_piece("rank-00000.h5");
  CheckpointReader r(dir.path().string(), m);
  std::vector<double> out(4);
  EXPECT_ERROR(r.read("w", StateKind::Param, 2, 2, 0, 4, out.data()),
               "rank-00000.h5: dataset 'w.param' has shape [1000000000000], the manifest says 4 values");
}

}  // namespace
}  // namespace wiola
