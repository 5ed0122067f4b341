#pragma once
// A micro-batch of fixed pseudo-random token ids and targets on a backend,
// for the programs that run a StageModel on the emulated CUDA backend.
#include <cstdint>
#include <vector>

#include "backend/backend.hpp"
#include "core/model_config.hpp"
#include "model/stage_model.hpp"

namespace wiola::test {

inline StageInput synthetic_input(Backend& be, const ModelConfig& cfg, int batch, int seq) {
  const auto vocab = static_cast<std::size_t>(cfg.V);
  std::vector<std::int32_t> ids(std::size_t(batch) * seq), targets(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<std::int32_t>((i * 7919) % vocab);
    targets[i] = static_cast<std::int32_t>((i * 104729 + 1) % vocab);
  }
  StageInput in;
  in.batch = batch;
  in.seq = seq;
  in.tokens = be.alloc(DType::I32, std::int64_t(batch) * seq, 1);
  in.targets = be.alloc(DType::I32, std::int64_t(batch) * seq, 1);
  be.from_host(ids.data(), in.tokens);
  be.from_host(targets.data(), in.targets);
  return in;
}

}  // namespace wiola::test
