#pragma once
// The checkpoint manifest (docs/checkpoints.md): a text file naming every data
// file of a checkpoint with its size and CRC-32, and every piece of every
// tensor — which element range of which tensor (parameters and AdamW moments,
// by canonical name and global shape) is stored in which file. Because pieces
// are described by global coordinates, a checkpoint written at one
// (PP, DP, ZeRO) layout loads at any other.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace wiola {

inline constexpr int kCheckpointVersion = 1;
inline constexpr const char* kManifestName = "manifest.txt";

enum class StateKind : std::uint8_t { Param, ExpAvg, ExpAvgSq };
const char* state_kind_name(StateKind k);  // "param", "exp_avg", "exp_avg_sq"

struct CheckpointFile {
  std::string name;  // relative to the checkpoint directory
  std::uint64_t bytes = 0;
  std::uint32_t crc32 = 0;
};

struct CheckpointPiece {
  std::string tensor;           // canonical name
  StateKind kind = StateKind::Param;
  std::int64_t rows = 0, cols = 0;  // the tensor's global shape
  std::int64_t begin = 0, end = 0;  // element range of the flattened tensor
  std::string file;                 // relative file name
  std::string dataset;              // 1-D dataset in that file holding [begin, end)
};

// The part of the training log's loss window (the steps after the last
// multiple of --log-interval) that a checkpoint's run had taken: the sum of
// those steps' losses in their order, kept exactly, and their count.
struct LossWindow {
  double sum = 0;
  std::int64_t steps = 0;
  double mean() const { return steps > 0 ? sum / double(steps) : 0.0; }
};

struct CheckpointManifest {
  std::int64_t step = 0;              // optimizer steps completed
  std::int64_t consumed_samples = 0;  // step × global batch
  long updates = 0;                   // AdamW updates taken (skipped steps excluded)
  LossWindow loss_window;             // absent in older manifests: empty
  std::string code_version;
  std::string layout;                 // "pp 2 dp 2 zero 1" (informative)
  std::string model;                  // ModelConfig::describe() (informative)
  std::string config;                 // the run's options as INI text
  bool has_optimizer_state = true;
  std::vector<CheckpointFile> files;
  std::vector<CheckpointPiece> pieces;

  std::string to_text() const;
  // Throws naming `where` and the line on any malformation.
  static CheckpointManifest parse(const std::string& text, const std::string& where);
};

void write_text_file_atomic(const std::string& path, const std::string& text);

}  // namespace wiola
