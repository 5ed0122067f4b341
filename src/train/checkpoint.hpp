#pragma once
// Saving and loading checkpoints from inside a training run (collective over
// the world). The format is layout-independent (io/checkpoint_manifest.hpp):
// every rank writes the element ranges it owns — its ZeRO shard, or with
// ZeRO-0 the first replica the whole stage — of the parameters and AdamW
// moments, under canonical names; loading reads whatever ranges the new
// layout needs from whichever files hold them.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/process_grid.hpp"
#include "io/checkpoint_io.hpp"
#include "core/version.hpp"  // code_version(), recorded in every checkpoint
#include "model/stage_model.hpp"
#include "train/train_observer.hpp"
#include "train/zero_optimizer.hpp"

namespace wiola {

struct CheckpointContext {
  StageModel& model;
  ZeroOptimizer& optimizer;
  const comm::ProcessGrid& grid;
  comm::Communicator& world;
  int zero = 0;
  TrainObserver* observer = nullptr;  // told of each tensor written (test seams)
};

struct CheckpointInfo {
  std::int64_t step = 0;
  std::int64_t consumed_samples = 0;
  LossWindow loss_window;  // the printed loss's steps since the last log boundary
  std::string code_version, config;
};

// The element ranges of a stage's flat buffer one rank writes: its ZeRO shard,
// or with ZeRO-0 the whole stage from the first replica; the last stage of a
// pipeline leaves out its copy of the tied embedding (the first stage's is it).
struct OwnedSlice {
  const ParamSpec* param;
  std::int64_t lo, hi;  // flat-buffer coordinates
};
std::vector<OwnedSlice> owned_slices(const ParamLayout& layout, int zero, int dp, int dp_index,
                                     bool skip_embedding);

// Writes <save_dir>/step-N (through step-N.partial), updates `latest` and keeps
// the newest `keep` checkpoints (keep <= 0: all). Returns the directory.
std::string save_checkpoint(const CheckpointContext& ctx, const std::string& save_dir,
                            const CheckpointInfo& info, int keep);

// The parameters of a stage's layout, in its flat order, from a checkpoint.
std::vector<double> read_stage_params(CheckpointReader& reader, const ParamLayout& layout);

// Loads `dir` into the model and optimizer after verifying every file's
// checksum (the work shared by all ranks). Throws CollectiveError, on every
// rank, naming what is wrong (missing or corrupt file, missing tensor, shape).
CheckpointInfo load_checkpoint(const CheckpointContext& ctx, const std::string& dir);

// --resume auto: the newest checkpoint (a step-N directory) under save_dir
// whose files all verify; corrupt or incomplete ones are reported on `log`
// (rank 0) and skipped. nullopt when there is none; when there are some but
// none loads, throws CollectiveError naming each and why (a fresh start over
// them must be asked for: --resume none). step-N.partial and hidden retired
// directories are never considered.
std::optional<std::string> find_resume_checkpoint(comm::Communicator& world,
                                                  const std::string& save_dir, std::ostream& log);

}  // namespace wiola
