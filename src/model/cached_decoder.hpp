#pragma once
// Incremental decoding of a whole Wiola model: inference only, ATM off (the
// papers' rule: merging would change the keys already cached). A call feeds n
// new tokens and costs n positions' work — the projections, the DSFF and the
// head run on the new rows only, and the new rows attend over the cached keys
// and values. Per layer ℓ the cache keeps
//   * the keys (after SRPE) and values of every position seen, [T, Hkv·dh] each;
//   * the running sum of the layer's input X_ℓ over those positions, in fp64.
//     The causal summary of a new position p is that sum / (p + 1): O(d) per
//     position, and the same double running sum the summary op keeps, so the
//     context is the full forward's to the last bit.
// The logits equal the full forward's (tests/model/test_cached_decoder.cpp:
// within 1e-10 in fp64, 1e-4 in fp32, fed one token at a time or in chunks).
//
// With sequence summaries (--summary sequence, the paper-literal option) no
// cache can be exact: every position's context is the mean over the whole
// sequence, which changes with each new token. The decoder then keeps the
// tokens and runs the whole sequence again at every feed (exact() is false):
// the same code path, with an empty cache.
//
// Wiola 13M models (arch wiola13m) decode through Wiola13mDecoder
// (model/decoder13m.hpp), one position per step, behind the same interface.
//
// Positions run from 0 to T − 1 (the SRPE tables end there); feed() refuses
// more. model/generate.hpp moves the window when a generation outgrows it.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/decoder13m.hpp"
#include "model/layer.hpp"
#include "model/stage_model.hpp"

namespace wiola {

class CachedDecoder {
 public:
  // `model` must hold the whole model (one stage with embedding, every layer
  // and the head); its parameters are read at every feed, not copied.
  explicit CachedDecoder(const StageModel& model);

  const ModelConfig& config() const { return c_; }
  Backend& backend() const { return be_; }
  // False with sequence summaries: every feed recomputes the whole sequence.
  bool exact() const { return d13_ || c_.summary == SummaryMode::Causal; }
  int capacity() const { return c_.T; }
  // Positions fed since the last reset.
  int length() const { return length_; }
  // Forgets every position (the buffers stay allocated).
  void reset();

  // Feeds tokens at positions length() .. length() + n − 1 and returns the
  // logits of the new positions, [n, V] (model dtype), or only of the last one
  // ([1, V]) when `last_only`. Throws when a token is outside [0, V) or the
  // positions would pass capacity().
  Tensor feed(std::span<const std::int32_t> tokens, bool last_only = false);

 private:
  // Runs `tokens` (positions past ..) through every layer; logits of the last
  // `out_rows` of them.
  Tensor run(std::span<const std::int32_t> tokens, int past, std::int64_t out_rows);
  Tensor feed_wiola13m(std::span<const std::int32_t> tokens, std::int64_t out_rows);
  // The summaries of the new rows x of layer input X_l: [n, d] (causal,
  // advancing the running sum) or [1, d] (sequence; past is 0).
  Tensor summaries(int layer, const Tensor& x, int past);

  const StageModel& model_;
  Backend& be_;
  const ModelConfig& c_;
  std::vector<LayerKvCache> kv_;
  std::vector<Tensor> sums_;  // F64 [1, d] per layer: Σ X_ℓ over the positions seen
  Tensor row64_;              // F64 [1, d] scratch
  DecodeScratch scratch_;
  std::vector<std::int32_t> tokens_;  // sequence summaries: everything fed since reset
  int length_ = 0;
  std::unique_ptr<Wiola13mDecoder> d13_;  // set for arch wiola13m: it does all the work
};

}  // namespace wiola
