#include "io/tokenizer.hpp"


#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/text.hpp"
#include "io/bpe_tokenizer.hpp"
#include "io/byte_tokenizer.hpp"

namespace wiola {

std::unique_ptr<Tokenizer> make_tokenizer(std::string_view name) {
  if (name == ByteTokenizer::kName) return std::make_unique<ByteTokenizer>();
  if (name == BpeTokenizer::kName)
    fail("tokenizer '", name, "' is data, not built in: give its file (--tokenizer FILE)");
  fail("tokenizer '", name, "' is unknown (known: ", ByteTokenizer::kName, ", and ",
       BpeTokenizer::kName, " from a tokenizer file)");
}

std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path) {
  return tokenizer_from_model_text(read_text_file(path, "the tokenizer file"), path);
}

std::unique_ptr<Tokenizer> tokenizer_from_model_text(std::string_view text,
                                                     const std::string& where) {
  return std::make_unique<BpeTokenizer>(BpeTokenizer::parse(text, where));
}

std::string hex64(std::uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 0xF];
  return s;
}

ExternalTokenizer::ExternalTokenizer(std::string name, int vocab_size, std::int32_t eod_id)
    : name_(std::move(name)), vocab_(vocab_size), eod_(eod_id) {
  require(!name_.empty(), "tokenizer name must not be empty");
  require(name_ != "byte" && name_ != "bpe", "tokenizer name '", name_,
          "' is reserved for wiola's own tokenizers; choose another");
  require(vocab_ > 0, "vocabulary size must be positive, got ", vocab_);
  require(eod_ >= 0 && eod_ < vocab_, "end-of-document id ", eod_, " is outside [0, ", vocab_,
          ")");
  std::string desc = "wiola-external-tokenizer:v1:name=";
  desc += name_;
  desc += ":vocab=" + std::to_string(vocab_) + ":eod=" + std::to_string(eod_);
  hash_ = hex64(hash_name(desc));
}

std::vector<std::int32_t> ExternalTokenizer::encode(std::string_view) const {
  fail("tokenizer '", name_, "' is external to wiola: it cannot encode text");
}

std::string ExternalTokenizer::decode(std::span<const std::int32_t>) const {
  fail("tokenizer '", name_, "' is external to wiola: it cannot decode ids");
}

}  // namespace wiola
