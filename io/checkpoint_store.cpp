#include "io/checkpoint_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/error.hpp"
#include "core/text.hpp"
#include "io/checksum.hpp"

namespace fs = std::filesystem;

namespace wiola {

std::string checkpoint_name(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

std::string partial_name(std::int64_t step) { return checkpoint_name(step) + ".partial"; }

namespace {

// The step of a complete checkpoint's directory name, or -1.
long long step_of(const std::string& name) {
  long long step = -1;
  char tail = 0;
  if (std::sscanf(name.c_str(), "step-%lld%c", &step, &tail) != 1) return -1;
  return name == checkpoint_name(step) ? step : -1;
}

}  // namespace

std::vector<std::string> list_checkpoints(const std::string& save_dir) {
  std::vector<std::pair<long long, std::string>> found;
  std::error_code ec;
  if (!fs::is_directory(save_dir, ec)) return {};
  for (const auto& e : fs::directory_iterator(save_dir, ec)) {
    const std::string name = e.path().filename().string();
    const long long step = step_of(name);
    if (step >= 0 && e.is_directory() && fs::exists(e.path() / kManifestName))
      found.emplace_back(step, name);
  }
  std::sort(found.rbegin(), found.rend());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

std::optional<std::string> read_latest(const std::string& save_dir) {
  const fs::path p = fs::path(save_dir) / "latest";
  if (!fs::exists(p)) return std::nullopt;
  std::string name = read_text_file(p.string());
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  return name;
}

void write_latest(const std::string& save_dir, const std::string& name) {
  write_text_file_atomic((fs::path(save_dir) / "latest").string(), name + "\n");
  sync_directory(save_dir);
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  require(fd >= 0, dir, ": cannot open directory to sync it");
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  require(ok, dir, ": fsync failed");
}

CheckpointManifest read_manifest(const std::string& dir) {
  const std::string path = (fs::path(dir) / kManifestName).string();
  require(fs::exists(path), dir, ": no ", kManifestName, " (not a complete checkpoint)");
  return CheckpointManifest::parse(read_text_file(path), path);
}

std::vector<std::string> verify_files(const std::string& dir, const CheckpointManifest& m,
                                      int offset, int stride) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < m.files.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(stride)) != offset) continue;
    const CheckpointFile& f = m.files[i];
    const std::string path = (fs::path(dir) / f.name).string();
    if (!fs::exists(path)) {
      problems.push_back(path + ": missing (the manifest lists it)");
      continue;
    }
    std::uint64_t bytes = 0;
    std::uint32_t crc = 0;
    try {
      crc = crc32_file(path, &bytes);
    } catch (const Error& e) {
      problems.push_back(e.what());
      continue;
    }
    if (bytes != f.bytes)
      problems.push_back(path + ": " + std::to_string(bytes) + " bytes, the manifest says " +
                         std::to_string(f.bytes) + " (truncated or replaced)");
    else if (crc != f.crc32)
      problems.push_back(path + ": checksum mismatch (corrupted)");
  }
  return problems;
}

std::vector<std::string> prune_checkpoints(const std::string& save_dir, int keep) {
  std::vector<std::string> removed;
  std::error_code ec;
  const std::vector<std::string> all = list_checkpoints(save_dir);
  if (keep > 0)
    for (std::size_t i = static_cast<std::size_t>(keep); i < all.size(); ++i) {
      fs::remove_all(fs::path(save_dir) / all[i], ec);
      removed.push_back(all[i]);
    }
  for (const auto& e : fs::directory_iterator(save_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 8 && name.rfind(".partial") == name.size() - 8) {
      fs::remove_all(e.path(), ec);
      removed.push_back(name);
    }
  }
  return removed;
}

}  // namespace wiola
