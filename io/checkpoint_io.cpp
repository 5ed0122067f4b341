#include "io/checkpoint_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "io/checksum.hpp"
#include "io/h5.hpp"

namespace fs = std::filesystem;

namespace wiola {

struct CheckpointFileWriter::Impl {
  std::string path, name;
  DType dtype;
  h5::File file;
};

CheckpointFileWriter::CheckpointFileWriter(const std::string& dir, const std::string& name,
                                           DType dtype)
    : impl_(std::make_unique<Impl>()) {
  require(dtype == DType::F32 || dtype == DType::F64, "checkpoint values are fp32 or fp64");
  impl_->path = (fs::path(dir) / name).string();
  impl_->name = name;
  impl_->dtype = dtype;
  impl_->file = h5::File::create(impl_->path);
}

CheckpointFileWriter::~CheckpointFileWriter() = default;

void CheckpointFileWriter::add(const std::string& tensor, StateKind kind, std::int64_t rows,
                               std::int64_t cols, std::int64_t begin, const double* values,
                               std::int64_t n) {
  const std::string dataset =
      std::string(state_kind_name(kind)) + "/" + tensor + "@" + std::to_string(begin);
  impl_->file.write<double>(dataset, {n}, std::span<const double>(values, std::size_t(n)),
                            impl_->dtype == DType::F64 ? h5::Type::F64 : h5::Type::F32);
  pieces_.push_back({tensor, kind, rows, cols, begin, begin + n, impl_->name, dataset});
}

CheckpointFile CheckpointFileWriter::finish() {
  impl_->file.close();
  const int fd = ::open(impl_->path.c_str(), O_RDONLY);
  require(fd >= 0, impl_->path, ": cannot open to sync");
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  require(synced, impl_->path, ": fsync failed");
  CheckpointFile f;
  f.name = impl_->name;
  f.crc32 = crc32_file(impl_->path, &f.bytes);
  return f;
}

struct CheckpointReader::Impl {
  std::string dir;
  const CheckpointManifest* manifest;
  std::map<std::string, h5::File> files;

  std::vector<double> load(const CheckpointPiece& p) {
    auto it = files.find(p.file);
    if (it == files.end())
      it = files.emplace(p.file, h5::File::open_read((fs::path(dir) / p.file).string())).first;
    // The shape first: nothing is allocated by what the rank file claims.
    const h5::Shape s = it->second.shape(p.dataset);
    require(s.size() == 1 && s[0] == p.end - p.begin, dir, "/", p.file, ": dataset '", p.dataset,
            "' has shape ", h5::shape_text(s), ", the manifest says ", p.end - p.begin, " values");
    return it->second.read<double>(p.dataset);
  }
};

CheckpointReader::CheckpointReader(std::string dir, const CheckpointManifest& manifest)
    : impl_(std::make_unique<Impl>()) {
  impl_->dir = std::move(dir);
  impl_->manifest = &manifest;
}

CheckpointReader::~CheckpointReader() = default;

bool CheckpointReader::has(const std::string& tensor, StateKind kind) const {
  for (const CheckpointPiece& p : impl_->manifest->pieces)
    if (p.tensor == tensor && p.kind == kind) return true;
  return false;
}

void CheckpointReader::read(const std::string& tensor, StateKind kind, std::int64_t rows,
                            std::int64_t cols, std::int64_t begin, std::int64_t end, double* out) {
  const std::string& dir = impl_->dir;
  std::int64_t covered = 0;
  bool seen = false;
  for (const CheckpointPiece& p : impl_->manifest->pieces) {
    if (p.tensor != tensor || p.kind != kind) continue;
    seen = true;
    require(p.rows == rows && p.cols == cols, dir, ": tensor '", tensor, "' is ", p.rows, "x",
            p.cols, " in the checkpoint but ", rows, "x", cols, " in this model");
    const std::int64_t a = std::max(begin, p.begin), b = std::min(end, p.end);
    if (a >= b) continue;
    const std::vector<double> v = impl_->load(p);
    std::copy(v.begin() + (a - p.begin), v.begin() + (b - p.begin), out + (a - begin));
    covered += b - a;
  }
  require(seen, dir, ": tensor '", tensor, "' (", state_kind_name(kind),
          ") is missing from the manifest");
  require(covered == end - begin, dir, ": tensor '", tensor, "' (", state_kind_name(kind),
          "): only ", covered, " of elements [", begin, ", ", end, ") are in the checkpoint");
}

}  // namespace wiola
