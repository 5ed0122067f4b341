#pragma once
// Text generation on a CachedDecoder: the prompt is fed once, then one token
// per step. The sampler is host code over one row of logits; its random
// numbers are a pure function of (seed, step), so a run repeats exactly.
//
// The window: positions end at the model context T. When the prompt and the
// tokens generated so far outgrow it, the decoder restarts from the most
// recent ⌊T/2⌋ tokens (the whole last T of a prompt longer than T): one
// recomputation of half a window every T/2 tokens, and the model always sees
// at least T/2 tokens of context. GenerationStats::window_shifts counts them.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/cached_decoder.hpp"

namespace wiola {

struct SamplingOptions {
  int max_new_tokens = 64;
  bool greedy = false;       // argmax (also when temperature is 0)
  double temperature = 1.0;  // >= 0; logits are divided by it
  int top_k = 0;             // keep the k most likely tokens (0: all)
  double top_p = 1.0;        // keep the smallest set of most likely tokens reaching p, (0, 1]
  std::uint64_t seed = 0;
  // Only ids below this are drawn (0: every id): a model trained with a wider
  // --vocab than its tokenizer never yields an id the tokenizer cannot decode.
  int vocab = 0;
  // Generation ends after one of these ids (it is reported, then the loop stops).
  std::vector<std::int32_t> stop_ids;
  // Recompute the whole window at every step instead of using the cache (to
  // measure what the cache saves, and to check it: the tokens are the same).
  bool recompute = false;

  // Throws naming the option (--temperature, --top-k, --top-p, --max-new-tokens).
  void validate() const;
};

// Picks the next token from one row of logits.
class Sampler {
 public:
  explicit Sampler(SamplingOptions options);
  // `step` numbers the draws (0, 1, ...): the random number of draw s is
  // uniform01(key(seed), s). Ties in greedy decoding go to the lowest id.
  std::int32_t pick(std::span<const double> logits, std::uint64_t step) const;

 private:
  SamplingOptions o_;
  std::uint64_t key_;
};

struct GenerationStats {
  std::int64_t prompt_tokens = 0, new_tokens = 0;
  double prefill_seconds = 0;  // feeding the prompt and picking the first token
  double decode_seconds = 0;   // every later step
  int window_shifts = 0;
  bool stopped = false;        // a stop id ended the generation
  // New tokens per second over the decode steps (after the first token).
  double tokens_per_second() const;
};

// Feeds `prompt` (at least one token) and generates up to max_new_tokens;
// `on_token` sees each new id as soon as it is picked (including a stop id).
GenerationStats generate(CachedDecoder& decoder, std::span<const std::int32_t> prompt,
                         const SamplingOptions& options,
                         const std::function<void(std::int32_t)>& on_token);

}  // namespace wiola
