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

long long checkpoint_step(const std::string& name) {
  long long step = -1;
  char tail = 0;
  if (std::sscanf(name.c_str(), "step-%lld%c", &step, &tail) != 1 || step < 0) return -1;
  return name == checkpoint_name(step) ? step : -1;
}

namespace {

// step-N directories, newest first; with_manifest: only complete ones.
std::vector<std::string> step_dirs(const std::string& save_dir, bool with_manifest) {
  std::vector<std::pair<long long, std::string>> found;
  std::error_code ec;
  if (!fs::is_directory(save_dir, ec)) return {};
  for (const auto& e : fs::directory_iterator(save_dir, ec)) {
    const std::string name = e.path().filename().string();
    const long long step = checkpoint_step(name);
    if (step >= 0 && e.is_directory(ec) &&
        (!with_manifest || fs::exists(e.path() / kManifestName, ec)))
      found.emplace_back(step, name);
  }
  std::sort(found.rbegin(), found.rend());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

constexpr std::string_view kPartialSuffix = ".partial", kRetiredSuffix = ".retired";

bool is_retired(const std::string& name) {
  return name.size() > 1 && name[0] == '.' && ends_with(name, kRetiredSuffix);
}

}  // namespace

std::vector<std::string> list_checkpoints(const std::string& save_dir) {
  return step_dirs(save_dir, true);
}

std::vector<std::string> list_checkpoint_dirs(const std::string& save_dir) {
  return step_dirs(save_dir, false);
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

void require_loadable_name(const std::string& dir) {
  std::string name = fs::path(dir).lexically_normal().filename().string();
  if (name.empty()) name = fs::path(dir).lexically_normal().parent_path().filename().string();
  if (name.empty()) return;
  require(!(name[0] != '.' && ends_with(name, kPartialSuffix)), dir,
          ": an unfinished checkpoint (.partial: its save never completed); it is never loaded");
  require(!is_retired(name), dir,
          ": a checkpoint being deleted (pruned or replaced); it is never loaded");
}

namespace {

constexpr const char* kCheckpointForms =
    "name a step folder (SAVE/step-N, holding manifest.txt), a save folder (holding 'latest' or "
    "a complete step-N), a safetensors export (a folder with model.safetensors and config.json) "
    "or a weights file (W.h5)";

}  // namespace

NamedCheckpoint resolve_checkpoint(const std::string& path, bool training_only) {
  require(!path.empty(), "no checkpoint given: ", kCheckpointForms);
  std::error_code ec;
  require(fs::exists(path, ec), path, ": no such file or directory (", kCheckpointForms, ")");
  NamedCheckpoint c;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / kManifestName, ec)) {
      c.path = path;
    } else if (fs::exists(p / "model.safetensors", ec)) {
      c.kind = NamedCheckpoint::Kind::Safetensors;
      c.path = (p / "model.safetensors").string();
    } else {
      // A save folder: `latest` is written last; without it (or when it names
      // a step since removed), the newest complete step-N.
      std::optional<std::string> name = read_latest(path);
      if (!name || !fs::exists(p / *name / kManifestName, ec)) {
        const std::vector<std::string> all = list_checkpoints(path);
        name.reset();
        if (!all.empty()) name = all.front();
      }
      require(name.has_value(), path, ": not a checkpoint, nor a save folder with a complete one: ",
              kCheckpointForms);
      c.path = (p / *name).string();
    }
  } else {
    c.kind = path.size() >= 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0
                 ? NamedCheckpoint::Kind::Safetensors
                 : NamedCheckpoint::Kind::WeightsFile;
    c.path = path;
  }
  if (training_only && c.kind != NamedCheckpoint::Kind::Checkpoint)
    fail(path, ": ", c.kind == NamedCheckpoint::Kind::Safetensors ? "a safetensors export" : "a weights file",
         " holds the weights only; this needs a training checkpoint (a step folder SAVE/step-N or "
         "its save folder)");
  if (c.kind == NamedCheckpoint::Kind::Checkpoint) require_loadable_name(c.path);
  return c;
}

std::string resolve_checkpoint_dir(const std::string& path) {
  return resolve_checkpoint(path, true).path;
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

void retire_checkpoint(const std::string& save_dir, const std::string& name) {
  const fs::path from = fs::path(save_dir) / name;
  const fs::path to = fs::path(save_dir) / ("." + name + std::string(kRetiredSuffix));
  std::error_code ec;
  fs::remove_all(to, ec);  // an earlier retirement of the same name, already hidden
  require(!ec, to.string(), ": cannot remove: ", ec.message());
  fs::rename(from, to, ec);
  require(!ec, from.string(), ": cannot rename it to ", to.filename().string(), ": ", ec.message());
}

std::vector<std::string> retire_old_checkpoints(const std::string& save_dir, int keep,
                                                std::int64_t newest_step) {
  std::vector<std::string> retired;
  if (keep > 0) {
    int kept = 0;
    for (const std::string& name : list_checkpoints(save_dir)) {
      if (checkpoint_step(name) > newest_step) continue;  // an earlier run's later step
      if (kept++ < keep) continue;
      retired.push_back(name);
    }
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(save_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name[0] != '.' && ends_with(name, kPartialSuffix)) retired.push_back(name);
  }
  // Housekeeping: what cannot be renamed stays (complete) and is tried again
  // at the next save.
  std::vector<std::string> done;
  for (const std::string& name : retired) {
    try {
      retire_checkpoint(save_dir, name);
      done.push_back(name);
    } catch (const Error&) {
    }
  }
  if (!done.empty()) sync_directory(save_dir);
  return done;
}

void remove_retired(const std::string& save_dir) {
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (const auto& e : fs::directory_iterator(save_dir, ec))
    if (is_retired(e.path().filename().string())) doomed.push_back(e.path());
  for (const fs::path& p : doomed) fs::remove_all(p, ec);  // what stays is removed next time
}

std::vector<std::string> remove_leftovers(const std::string& save_dir) {
  std::vector<std::string> found;
  std::error_code ec;
  if (!fs::is_directory(save_dir, ec)) return found;
  for (const auto& e : fs::directory_iterator(save_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (is_retired(name) || (name[0] != '.' && ends_with(name, kPartialSuffix)))
      found.push_back(name);
  }
  for (const std::string& name : found)
    if (!is_retired(name)) retire_checkpoint(save_dir, name);
  if (!found.empty()) {
    sync_directory(save_dir);
    remove_retired(save_dir);
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace wiola
