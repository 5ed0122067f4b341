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
#include "profile/work_time.hpp"
#include "wiola-profile/files.hpp"
#include "wiola-profile/measured_profile.hpp"

namespace wiola::profile {

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

// The work of one pass of one part at one shape of a counts file (its
// "forward" or "backward" object); `where` names it in errors.
Work counted_pass(const Json& pass, const std::string& where);

// Per-layer (ATM or plain, as `model` places them), embedding and head times
// of one micro-batch at the ceilings.
LayerTimes counted_layer_times(const CountedWork& w, const ModelConfig& model,
                               const Ceilings& c);

}  // namespace wiola::profile
