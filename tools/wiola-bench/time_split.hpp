#pragma once
// The time of a training step per op family, split into forward, backward and
// optimizer (wiola-bench layers and model print it).
#include <cstdio>

#include "backend/backend.hpp"
#include "core/model_config.hpp"

namespace wiola::bench {

// Runs `steps` + 1 training steps of the whole model `c` (forward, backward,
// the gradient norm and AdamW, as the trainer's step) on `inner` with
// micro-batch `micro_batch` of random tokens, the first untimed, the others
// with every op timed (synchronised), and prints per op family the
// milliseconds per step in each phase, then the most expensive ops.
void print_time_split(Backend& inner, DType dtype, const ModelConfig& c, int micro_batch,
                      int steps, std::FILE* out = stdout);

}  // namespace wiola::bench
