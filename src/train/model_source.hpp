#pragma once
// Trained weights from wherever a user keeps them, for the programs that run
// a model rather than train it (wiola-generate, wiola-eval):
//   * a checkpoint directory (SAVE/step-N) of any layout: each stage reads the
//     ranges it needs from the layout-independent pieces (docs/checkpoints.md);
//   * a save folder (SAVE): its latest complete checkpoint;
//   * a weights file (wiola-train --export-weights W.h5);
//   * a safetensors export (wiola-reshard export-safetensors): the directory,
//     or its model.safetensors with config.json beside it.
// And the tokenizer the model was trained with.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/model_config.hpp"
#include "io/tokenizer.hpp"
#include "model/stage_model.hpp"
#include "train/options.hpp"

namespace wiola {

struct ModelSource {
  enum class Kind : std::uint8_t { Checkpoint, WeightsFile, Safetensors };
  Kind kind = Kind::Checkpoint;
  std::string path;         // the checkpoint directory or the file read
  std::string description;  // "checkpoint run/ckpt/step-00000300 (step 300)"
  ModelConfig config;
  std::optional<TrainOptions> run;  // the run's recorded options (checkpoints)
};

// Finds what `path` names and reads its description (a checkpoint's manifest,
// a file's hyper-parameters). A checkpoint's files are checked against their
// sizes and CRC-32s, those with index % parts == part (ranks can share the
// work; parts = 0 skips the check). Errors name the path and say what was
// expected there.
ModelSource open_model_source(const std::string& path, int part = 0, int parts = 1);

// Loads the parameters of `model`'s stage (any stage of any layout).
void load_parameters(const ModelSource& source, StageModel& model);

// The tokenizer of the model: `choice` when given — "byte", a token file
// (*.h5: the tokenizer it records or embeds) or a BPE tokenizer file — else
// the tokenizer of the run's first training file (checkpoints record the
// run). Checks that its ids fit the model's vocabulary. Throws saying what to
// pass when neither is available.
std::unique_ptr<Tokenizer> model_tokenizer(const ModelSource& source, const std::string& choice);

// The tokenizer recorded in (or embedded by) a token file.
std::unique_ptr<Tokenizer> token_file_tokenizer(const std::string& path);

}  // namespace wiola
