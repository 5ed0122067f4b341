#pragma once
// Reading and writing the data files of a checkpoint (docs/checkpoints.md).
// A writer fills one HDF5 file with pieces — element ranges of tensors in
// global coordinates — and reports the manifest entries for them; a reader
// assembles any range of any tensor from whichever files hold it.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "io/checkpoint_manifest.hpp"

namespace wiola {

class CheckpointFileWriter {
 public:
  // Creates <dir>/<name>; values are stored as fp32 or fp64 (`dtype`).
  CheckpointFileWriter(const std::string& dir, const std::string& name, DType dtype);
  ~CheckpointFileWriter();
  CheckpointFileWriter(const CheckpointFileWriter&) = delete;
  CheckpointFileWriter& operator=(const CheckpointFileWriter&) = delete;

  // Elements [begin, begin + n) of tensor `tensor` (global shape rows x cols).
  void add(const std::string& tensor, StateKind kind, std::int64_t rows, std::int64_t cols,
           std::int64_t begin, const double* values, std::int64_t n);
  // Closes, syncs and checksums the file.
  CheckpointFile finish();
  const std::vector<CheckpointPiece>& pieces() const { return pieces_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<CheckpointPiece> pieces_;
};

class CheckpointReader {
 public:
  CheckpointReader(std::string dir, const CheckpointManifest& manifest);
  ~CheckpointReader();
  // Fills out[0 .. end-begin) with elements [begin, end) of the tensor; throws
  // naming the tensor when it is missing, mis-shaped or not fully covered.
  void read(const std::string& tensor, StateKind kind, std::int64_t rows, std::int64_t cols,
            std::int64_t begin, std::int64_t end, double* out);
  bool has(const std::string& tensor, StateKind kind) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wiola
