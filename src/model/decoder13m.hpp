#pragma once
// A cached (incremental) decoder for Wiola 13M (arch wiola13m): one token at a
// time, keeping per layer the keys and values of the positions so far and the
// running sum of the head-averaged query m_s that the gate's prefix mean c_t
// needs. Because the gate is causal, its logits at every position equal the
// full-sequence forward's (paper 002's exactness claim; SPEC "The Wiola 13M
// variant"): the same backend ops on one row, the same key order, the running
// sum in double as in the summary op.
#include <cstdint>
#include <vector>

#include "backend/backend.hpp"
#include "model/stage_model.hpp"

namespace wiola {

class Wiola13mDecoder {
 public:
  // `model` holds the whole Wiola 13M model (embedding, every layer, head);
  // its parameters are read at every step (they may change in between, but
  // the cache then describes the old ones: reset()).
  explicit Wiola13mDecoder(const StageModel& model);

  // Feeds `token` at position position() and returns that position's logits
  // [V] (in double). Throws when the context T is full.
  std::vector<double> step(std::int32_t token);
  int position() const { return pos_; }
  // Forgets every position.
  void reset();

 private:
  struct LayerCache {
    Tensor k, v;              // [T, Hkv·dh], rows [0, position) filled
    std::vector<double> msum;  // Σ_{s<position} m_s, [dh]
  };
  Tensor alloc(std::int64_t rows, std::int64_t cols) const;

  const StageModel& model_;
  Backend& be_;
  const ModelConfig& c_;
  DType dtype_;
  Tensor cos_, sin_;      // spiral RoPE tables [T, dh/2]
  Tensor q_all_;          // [T, H·dh] query buffer (row 0 is the query; the rest padding)
  std::vector<LayerCache> layers_;
  int pos_ = 0;
};

}  // namespace wiola
