#pragma once
// One micro-batch as the data feed hands it to the pipeline: token ids on the
// host. The first stage uploads the inputs, the last stage the targets; the
// number of counted target tokens is known here, on the host, so the loss
// never has to be read back per micro-batch to be averaged.
#include <cstdint>
#include <vector>

namespace wiola {

struct HostBatch {
  int batch = 0, seq = 0;
  std::vector<std::int32_t> inputs;   // [batch * seq]
  std::vector<std::int32_t> targets;  // [batch * seq]; -1: not counted in the loss

  std::int64_t target_tokens() const {
    std::int64_t n = 0;
    for (std::int32_t t : targets) n += t >= 0;
    return n;
  }
};

}  // namespace wiola
