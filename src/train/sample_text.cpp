#include "train/sample_text.hpp"

#include "core/error.hpp"
#include "io/escape.hpp"
#include "model/generate.hpp"
#include "train/model_source.hpp"

namespace wiola {

TrainingSampler::TrainingSampler(const ModelConfig& config, const std::string& train_file,
                                 const std::string& prompt)
    : config_(config), tokenizer_(token_file_tokenizer(train_file)), prompt_(prompt) {
  ids_.push_back(tokenizer_->eod_id());  // a document starts after an end-of-document id
  try {
    for (std::int32_t id : tokenizer_->encode(prompt)) ids_.push_back(id);
  } catch (const Error& e) {
    fail("--sample-prompt: ", e.what());
  }
  require(tokenizer_->vocab_size() <= config_.V, "--sample-every: the tokenizer of ", train_file,
          " has more ids than the model's vocabulary");
}

std::string TrainingSampler::sample(const StageModel& whole) const {
  CachedDecoder decoder(whole);
  SamplingOptions o;
  o.greedy = true;
  o.max_new_tokens = kSampleTokens;
  o.stop_ids = {tokenizer_->eod_id()};
  o.vocab = tokenizer_->vocab_size();
  std::vector<std::int32_t> out;
  generate(decoder, ids_, o, [&](std::int32_t id) {
    if (id != tokenizer_->eod_id()) out.push_back(id);
  });
  return escape_text(prompt_ + tokenizer_->decode(out));
}

std::string TrainingSampler::sample(const std::vector<NamedArray>& params) {
  if (!copy_) {
    backend_ = make_cpu_backend();
    copy_ = std::make_unique<StageModel>(*backend_, config_, StageSpec::whole(config_), DType::F32);
  }
  for (const NamedArray& a : params) copy_->params().set(a.name, a.data);
  return sample(*copy_);
}

}  // namespace wiola
