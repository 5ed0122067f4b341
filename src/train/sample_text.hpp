#pragma once
// --sample-every K: every K steps rank 0 prints a short greedy continuation of
// a fixed prompt (--sample-prompt), so a run shows its text getting better,
// not only its loss. The continuation comes from the cached decoder
// (model/generate.hpp) on a whole-model copy: with one CPU stage that is the
// trained model itself; otherwise the trainer gathers the parameters to rank 0
// (as --export-weights does) into a CPU fp32 copy. Gathering is simpler than
// generating through the pipeline — one token per trip through every stage —
// and is correct for any layout and device; it costs one parameter transfer
// to rank 0 per sample.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/tokenizer.hpp"
#include "io/weights_file.hpp"
#include "model/stage_model.hpp"

namespace wiola {

inline constexpr const char* kDefaultSamplePrompt = "You will be";
inline constexpr int kSampleTokens = 32;

class TrainingSampler {
 public:
  // Takes the tokenizer of the training data (`train_file`) and encodes the
  // prompt; throws when that tokenizer cannot encode (an imported vocabulary).
  TrainingSampler(const ModelConfig& config, const std::string& train_file,
                  const std::string& prompt);
  // The prompt and its greedy continuation, escaped onto one line. `whole`
  // holds the whole model.
  std::string sample(const StageModel& whole) const;
  // The same from gathered parameters, in a CPU fp32 copy kept between calls.
  std::string sample(const std::vector<NamedArray>& params);

 private:
  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::string prompt_;
  std::vector<std::int32_t> ids_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<StageModel> copy_;
};

}  // namespace wiola
