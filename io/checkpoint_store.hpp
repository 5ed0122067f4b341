#pragma once
// Checkpoint directories under a run's save directory:
//   <save>/step-00000120/         a complete checkpoint: data files + manifest.txt
//   <save>/step-00000120.partial/ one being written (never loaded; removed later)
//   <save>/latest                 the newest complete one's name, replaced last
//   <save>/.step-00000040.retired/ one being deleted (pruned; never loaded; removed later)
// A checkpoint directory is renamed into place only after every file in it is
// written, synced and listed with its CRC-32 in the manifest, and renamed to a
// hidden name before it is deleted, so a crash or a kill at any moment leaves
// every checkpoint under a step-N name complete.
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
// Every directory named step-N, manifest or not, newest first (--resume auto
// reports the ones that are not complete).
std::vector<std::string> list_checkpoint_dirs(const std::string& save_dir);
// The step of a checkpoint directory's name "step-N", or -1 for any other name
// (step-N.partial and hidden names included).
long long checkpoint_step(const std::string& name);
std::optional<std::string> read_latest(const std::string& save_dir);
void write_latest(const std::string& save_dir, const std::string& name);

// fsync a directory, so renames inside it are durable.
void sync_directory(const std::string& dir);

// Refuses a directory whose name says it is unfinished or being deleted
// (step-N.partial, .step-N.retired): such a directory is never loaded, even
// when it holds a manifest.
void require_loadable_name(const std::string& dir);

// What a user names to mean trained weights, resolved the same way by every
// tool (wiola-reshard, wiola-eval, wiola-generate, wiola-dump, --resume):
//   a step folder (SAVE/step-N, holding manifest.txt): itself;
//   a save folder (SAVE): its `latest`, else its newest complete step-N;
//   a safetensors export (a folder with model.safetensors, or that file);
//   a weights file (W.h5 from --export-weights or import-safetensors).
struct NamedCheckpoint {
  enum class Kind : std::uint8_t { Checkpoint, Safetensors, WeightsFile };
  Kind kind = Kind::Checkpoint;
  std::string path;  // the step folder, model.safetensors, or the weights file
};
// `training_only`: the caller needs a training checkpoint (optimizer state,
// the run's options): an export or a weights file is refused, saying so.
// Every other error is one message naming the path and the forms above.
NamedCheckpoint resolve_checkpoint(const std::string& path, bool training_only = false);
// The same for callers that need a step folder: its path.
std::string resolve_checkpoint_dir(const std::string& path);

// Reads and parses <dir>/manifest.txt.
CheckpointManifest read_manifest(const std::string& dir);
// Checks that the listed files exist with their sizes and CRC-32s, those with
// index % stride == offset (so ranks can share the work). Returns the problems
// found, each naming the file; empty when all is well.
std::vector<std::string> verify_files(const std::string& dir, const CheckpointManifest& m,
                                      int offset = 0, int stride = 1);

// Hides <save_dir>/<name> under its retired name (".<name>.retired"), then
// syncs save_dir: from here on it is no checkpoint, whatever happens to it.
void retire_checkpoint(const std::string& save_dir, const std::string& name);

// Pruning, in two halves so that a kill between them is harmless:
// retire_old_checkpoints renames the complete checkpoints beyond the newest
// `keep` among those of step <= newest_step (keep <= 0: none; a later step is
// an earlier run's, left alone) and every step-N.partial directory to hidden
// names, and returns the names it retired; remove_retired deletes every
// hidden retired directory.
std::vector<std::string> retire_old_checkpoints(const std::string& save_dir, int keep,
                                                std::int64_t newest_step);
void remove_retired(const std::string& save_dir);

// Leftovers of an interrupted save or prune (step-N.partial and hidden
// retired directories), removed before a run writes to save_dir; returns
// their names.
std::vector<std::string> remove_leftovers(const std::string& save_dir);

}  // namespace wiola
