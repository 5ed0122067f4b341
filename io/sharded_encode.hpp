#pragma once
// `wiola-data encode --out-dir`: many tasks (a Slurm job's, or processes
// started by hand) encode one list of input files into one folder.
//
// Each input file is a *unit*: file i becomes DIR/part-<i>.h5 (or, with
// shard_tokens, part-<i>-00000.h5, ...), written by exactly one task. Units
// go to tasks by size, largest first, each to the task with the fewest bytes
// so far (ties: the lower task), so the shares are disjoint and the same on
// every task. What a unit's files hold depends only on its input and the
// options, never on the task count, and HDF5 writes no timestamps: the same
// bytes for 1 task or 64.
//
// A finished unit leaves DIR/part-<i>.done (JSON: input, its size, the
// options, the outputs, documents and tokens), written after its outputs are
// in place. A re-run skips units whose .done matches, so after a failure only
// the lost shares are redone. The task that finds every unit done writes the
// manifest (DIR/dataset.manifest unless named), which `--train-data` accepts;
// no manifest is written while any unit is missing.
#include <cstdint>
#include <string>
#include <vector>

#include "io/text_encoder.hpp"

namespace wiola {

struct ShardedEncodeOptions {
  std::string out_dir;
  std::string manifest;  // "" = out_dir/dataset.manifest
  int task = 0, tasks = 1;
  EncodeOptions encode;
};

struct ShardedEncodeReport {
  std::vector<std::size_t> units;  // this task's share (input indices)
  std::vector<std::size_t> skipped_done;  // of those, already done by an earlier run
  EncodeReport encoded;                   // summed over the units encoded now
  std::string manifest;                   // its path when this task wrote it, else ""
  std::vector<std::size_t> missing;       // units not yet done (by any task)
};

// Which task encodes each input: by size, largest first (see above).
std::vector<int> assign_units(const std::vector<std::int64_t>& sizes, int tasks);

// The output name of unit i ("part-00007.h5").
std::string unit_output_name(std::size_t unit);

ShardedEncodeReport encode_sharded(const std::vector<std::string>& inputs,
                                   const TextInputOptions& input_options,
                                   const Tokenizer& tokenizer,
                                   const ShardedEncodeOptions& options);

}  // namespace wiola
