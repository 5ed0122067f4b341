#pragma once
// Checkpoint directories under a run's save directory:
//   <save>/step-00000120/         a complete checkpoint: data files + manifest.txt
//   <save>/step-00000120.partial/ one being written (never loaded; removed later)
//   <save>/latest                 the newest complete one's name, replaced last
// A checkpoint directory is renamed into place only after every file in it is
// written, synced and listed with its CRC-32 in the manifest, so a crash or a
// kill at any moment leaves the previous checkpoints loadable.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/checkpoint_manifest.hpp"

namespace wiola {

std::string checkpoint_name(std::int64_t step);  // "step-00000120"
std::string partial_name(std::int64_t step);     // "step-00000120.partial"

// Complete checkpoints (a directory named step-N holding a manifest), newest first.
std::vector<std::string> list_checkpoints(const std::string& save_dir);
std::optional<std::string> read_latest(const std::string& save_dir);
void write_latest(const std::string& save_dir, const std::string& name);

// fsync a directory, so renames inside it are durable.
void sync_directory(const std::string& dir);

// Reads and parses <dir>/manifest.txt.
CheckpointManifest read_manifest(const std::string& dir);
// Checks that the listed files exist with their sizes and CRC-32s, those with
// index % stride == offset (so ranks can share the work). Returns the problems
// found, each naming the file; empty when all is well.
std::vector<std::string> verify_files(const std::string& dir, const CheckpointManifest& m,
                                      int offset = 0, int stride = 1);

// Removes complete checkpoints beyond the newest `keep` (keep <= 0: none) and
// any stale partial directories; returns what it removed.
std::vector<std::string> prune_checkpoints(const std::string& save_dir, int keep);

}  // namespace wiola
