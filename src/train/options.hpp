#pragma once
// Everything wiola-train can be told, from the command line or an INI-style
// config file (`key = value`, the long option names, comment lines starting
// with '#' or ';', no sections; the dialect is core/ini.hpp's); the command
// line wins over the file. `--help` prints the options grouped.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/model_config.hpp"
#include "optim/adamw_optimizer.hpp"
#include "pipeline/schedule.hpp"

namespace wiola {

// --train-tokens: a number of tokens, or 20 tokens per exact parameter.
struct TokenBudget {
  enum class Kind : std::uint8_t { Unset, Tokens, Chinchilla };
  Kind kind = Kind::Unset;
  std::int64_t tokens = 0;  // Kind::Tokens
  static TokenBudget parse(const std::string& text);  // "<N>" | "chinchilla"; throws otherwise
  std::string text() const;                           // as parse() reads it; "" when unset
};

// --resume: never, the newest verified checkpoint in --save, or a directory.
struct ResumeFrom {
  enum class Kind : std::uint8_t { None, Auto, Directory };
  Kind kind = Kind::None;
  std::string directory;  // Kind::Directory
  static ResumeFrom parse(const std::string& text);  // "none" | "auto" | a directory
  std::string text() const;
};

// --device: where the stage runs.
enum class DeviceChoice : std::uint8_t {
  Auto,  // CUDA when this build has it and a device is visible, else the CPU
  CPU,
  CUDA,
};
std::string_view device_choice_name(DeviceChoice d);
// "auto" | "cpu" | "cuda"; throws naming --device otherwise.
DeviceChoice parse_device_choice(const std::string& text);

// The options in sections, each its own type with the checks of its own
// values (every message leads with the option); TrainOptions::validate adds
// the checks across sections. The parts of a run take the sections they need.

// --preset and the architecture flags, --seed.
struct ModelOptions {
  ModelConfig config;
  bool vocab_explicit = false;  // --vocab given: else the dataset's vocabulary is adopted
  std::uint64_t seed = 1234;    // the initialisation and the sample order
  void check_values() const;
};

// --device, --dtype, --threads, --allow-shared-device.
struct DeviceOptions {
  DeviceChoice choice = DeviceChoice::Auto;
  bool allow_shared = false;  // ranks of one host may share a GPU (train/device_plan.hpp)
  // Compute dtype: fp32 | fp64 on the CPU, bf16 | fp32 on CUDA. When not given
  // (--dtype auto) the trainer takes bf16 on CUDA and fp32 on the CPU.
  DType dtype = DType::F32;
  bool dtype_explicit = false;
  int threads = 0;  // 0: leave OpenMP/BLAS defaults
  // --cuda-graphs: micro-batches replay CUDA graphs where the backend records
  // them (pipeline/micro_batch_graphs.hpp); nothing changes on the CPU.
  bool cuda_graphs = true;
  void check_values() const;
  void validate() const;  // --dtype against --device
};

// --train-data, --val-data and how they are read.
struct DataOptions {
  std::vector<std::string> train_files;
  std::vector<std::string> val_files;
  std::vector<double> data_weights;  // per training file (mixing); empty: by size
  double val_fraction = 0;           // held-out fraction of documents (instead of --val-data)
  std::uint64_t split_seed = 0;      // which documents are held out
  int prefetch = 2;                  // micro-batches read ahead in the background
  void check_values() const;
  void validate() const;  // training files given; --val-fraction or --val-data
};

// The process grid, the batch and its micro-batches, the pipeline schedule,
// ZeRO and recomputation.
struct ParallelOptions {
  int pp = 1, dp = 1;
  int micro_batch = 4;    // sequences per micro-batch
  int global_batch = 16;  // sequences per optimizer step, over all data-parallel ranks
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::OneFOneB;
  int virtual_stages = 1;    // chunks per stage (--schedule interleaved)
  std::string stage_layers;  // one entry per virtual stage: pp × virtual-stages
  int zero = 0;
  bool recompute = false;  // --recompute full: keep layer inputs only, recompute in backward
  double comm_timeout = 300.0;
  int micro_batches_per_rank() const { return global_batch / (dp * micro_batch); }
  void check_values() const;
  // The batch against the grid, the schedule's shape, the chunks against `layers`.
  void validate(int layers) const;
};

// AdamW, the learning-rate schedule and the budget it spans.
struct OptimizerOptions {
  double lr = 3e-4, min_lr = 0.0, warmup_frac = 0.05, clip = 1.0;
  AdamWConfig adam;
  TokenBudget train_tokens;
  std::int64_t steps = 0;       // > 0 overrides train_tokens
  int max_nonfinite_steps = 5;  // consecutive steps with a non-finite loss or gradient norm
  void check_values() const;
};

// Checkpoints, resuming, and the weights a run starts from or exports.
struct CheckpointOptions {
  std::string save_dir;            // "" : no checkpoints
  std::int64_t save_interval = 0;  // steps between checkpoints (0: only at the end and on signals)
  double save_minutes = 0;         // minutes between checkpoints (0: off)
  int keep = 3;                    // newest checkpoints kept (0: all)
  ResumeFrom resume;
  std::string init_weights;          // weights file to start from
  std::int64_t exit_after_step = 0;  // checkpoint and stop after this step (0: off)
  std::string export_weights;        // the final weights as an HDF5 file
  void check_values() const;
  void validate() const;  // --resume auto has a --save to look in
};

// What a run prints and records: the log, validation, samples, metrics.
struct LoggingOptions {
  int log_interval = 10;
  int eval_interval = 100;
  int eval_batches = 8;
  int sample_every = 0;       // print a greedy continuation of sample_prompt every N steps (0: off)
  std::string sample_prompt;  // "" : kDefaultSamplePrompt (train/sample_text.hpp)
  std::string metrics_file;   // --metrics: JSON Lines of the run (train/metrics_log.hpp)
  void check_values() const;
};

struct TrainOptions {
  ModelOptions model;
  DeviceOptions device;
  DataOptions data;
  ParallelOptions parallel;
  OptimizerOptions optimizer;
  CheckpointOptions checkpoint;
  LoggingOptions logging;
  bool print_params = false;
  bool dry_run = false;  // check everything, print the plan, train nothing

  std::int64_t resolved_train_tokens() const;  // from optimizer.train_tokens / steps
  std::int64_t total_steps() const;
  // Every section's check_values(): each option against its range, NaN and
  // infinity refused, each message leading with the option
  // (parse_train_options runs it).
  void check_values() const;
  // check_values() and every section's validate(), naming the flags.
  void validate() const;
};

// Parses argv (and --config FILE). Returns nullopt when the program should exit
// successfully right away (--help, --version), after printing to `out`. Throws wiola::Error
// for unknown options, malformed values and inconsistent settings.
std::optional<TrainOptions> parse_train_options(int argc, const char* const* argv,
                                                std::ostream& out);

// Options from an INI text alone (a checkpoint's recorded configuration).
TrainOptions options_from_ini(const std::string& text);

// The options as an INI text wiola-train --config reads back (recorded in
// every checkpoint).
std::string to_ini(const TrainOptions& o);

// Repeated and comma-separated file lists (--train-data a.h5,b.h5 --train-data
// c.h5), empty items left out.
std::vector<std::string> file_list(const std::vector<std::string>& items);

// The default training and validation files (the embedded dataset of this build).
std::string default_train_file();
std::string default_val_file();

}  // namespace wiola
