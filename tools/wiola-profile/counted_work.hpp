#pragma once
// Layer times from counted device work (docs/profiling.md, "Projection from
// counts"). tools/gpu-counts.sh --json writes what the CUDA backend asks of a
// GPU in one training micro-batch, part by part (an ATM layer, a plain layer,
// the last layer with the head, the embedding), forward and backward: the
// matrix products' FLOPs, the attention tiles' FLOPs, the bytes the other
// kernels move and the device operations. A GPU check measures a ceiling for
// each kind of work. A part's time is its work over each ceiling, summed: one
// stream runs the operations one after another.
#include <string>

#include "core/model_config.hpp"
#include "wiola-profile/measured_profile.hpp"

namespace wiola::profile {

// What a device reaches on each kind of work ([ceilings] in a spec).
struct Ceilings {
  double gemm_flops_per_s = 0;       // matrix products (cuBLASLt)
  double attention_flops_per_s = 0;  // the attention kernels' tile products
  double memory_Bps = 0;             // bytes through device memory
  double operation_s = 0;            // the gap each device operation costs
  std::string source;                // where the figures come from
};

// The work of one pass of one part, in a micro-batch of the target.
struct Work {
  double gemm_flops = 0, attention_flops = 0, bytes = 0, operations = 0;
};

// A Work's time at the ceilings, by kind.
struct WorkTime {
  double gemm_s = 0, attention_s = 0, memory_s = 0, operations_s = 0;
  double total() const { return gemm_s + attention_s + memory_s + operations_s; }
};
WorkTime time_of(const Work& w, const Ceilings& c);

struct CountedPart {
  Work forward, backward;
};

// A counts file fitted to the target's micro-batch.
struct CountedWork {
  std::string file;
  std::string counted;  // what was counted: "wiola-1.5b widths, bf16, at 1x64, 2x64, 1x128"
  int micro_batch = 0;  // sequences the work is for
  int seq = 0;          // tokens a sequence
  CountedPart atm_layer, plain_layer;
  CountedPart head;       // the last layer with the head, less a plain layer
  CountedPart embedding;
};

// Reads the counts file at `path`, checks that it counted `model`'s widths
// (its layer count may differ), and fits every quantity of every part as
// f + b (α t + β t²) over the three shapes it holds (b sequences of t
// tokens), then evaluates the fit at `micro_batch` sequences of `seq`
// tokens (the target's: model.T). Exact for what is fixed (launches), what grows with the tokens
// (products over token rows, elementwise bytes) and a causal mask's tiles
// (t a multiple of the 64-row tile). Throws wiola::Error naming the file.
CountedWork read_counted_work(const std::string& path, const ModelConfig& model,
                              int micro_batch, int seq);

// Per-layer (ATM or plain, as `model` places them), embedding and head times
// of one micro-batch at the ceilings.
LayerTimes counted_layer_times(const CountedWork& w, const ModelConfig& model,
                               const Ceilings& c);

}  // namespace wiola::profile
