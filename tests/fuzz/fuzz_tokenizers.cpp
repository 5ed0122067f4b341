// Tokenizer files: wiola's BPE model text (what a token file embeds and
// --tokenizer names) and a Hugging Face tokenizer.json import. A tokenizer
// that loads must also encode and decode without failing.
#include <memory>

#include "fuzz/fuzz_target.hpp"
#include "io/bpe_tokenizer.hpp"
#include "io/hf_tokenizer.hpp"
#include "io/tokenizer.hpp"

namespace {
// A loaded tokenizer is used: encode a text with bytes of every kind, decode it back.
void exercise(const wiola::Tokenizer& tok) {
  static const std::string text = "Hello, world!\n\tcaf\xC3\xA9 12345 \xE2\x82\xAC \xF0\x9F\x98\x80 x";
  const auto ids = tok.encode(text);
  for (auto id : ids)
    if (id < 0 || id >= tok.vocab_size()) wiola::fuzz::bug("encode gave an id outside the vocabulary");
  (void)tok.decode(ids);
}
}  // namespace

WIOLA_FUZZ_TARGET(bpe_model) {
  const std::string where = "fuzz.bpe";
  std::unique_ptr<wiola::Tokenizer> tok;
  if (wiola::fuzz::read_or_refuse(where, [&] { tok = wiola::tokenizer_from_model_text(bytes, where); }))
    exercise(*tok);
}

WIOLA_FUZZ_TARGET(hf_tokenizer) {
  const std::string where = "fuzz/tokenizer.json";
  std::unique_ptr<wiola::BpeTokenizer> tok;
  if (wiola::fuzz::read_or_refuse(where, [&] {
        tok = std::make_unique<wiola::BpeTokenizer>(wiola::bpe_from_hf_tokenizer_json(bytes, where));
      }))
    exercise(*tok);
}
