#pragma once
// A dataset that HDF5 declares but never stores: a chunked 1-D dataset of n
// elements (n > 0) with no chunk written, added to the existing file at `path`.
// Reading it gives fill values, not an error, so it is how the tests (and the
// token-file fuzz target) make a file that lies about what it holds.
#include <hdf5.h>

#include <stdexcept>
#include <string>

namespace wiola::test {

inline void add_hollow_dataset(const std::string& path, const char* name, hsize_t n,
                               hid_t file_type) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (file < 0) throw std::runtime_error(path + ": cannot open to add a hollow dataset");
  const hsize_t chunk = n < 1024 ? n : 1024;  // HDF5: a chunk no larger than the dataset
  const hid_t space = H5Screate_simple(1, &n, nullptr), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 1, &chunk);
  const hid_t ds = H5Dcreate2(file, name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  const bool ok = ds >= 0 && H5Dclose(ds) >= 0;
  H5Pclose(dcpl);
  H5Sclose(space);
  if (H5Fclose(file) < 0 || !ok) throw std::runtime_error(path + ": cannot add dataset " + name);
}

}  // namespace wiola::test
