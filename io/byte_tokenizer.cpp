#include "io/byte_tokenizer.hpp"

#include "core/error.hpp"
#include "core/rng.hpp"

namespace wiola {

namespace {
constexpr std::string_view kEodText = "<|endoftext|>";
}

std::string ByteTokenizer::hash() const {
  // A digest of the full definition, so it changes if the vocabulary ever does.
  return hex64(hash_name("wiola-byte-tokenizer:v1:bytes=0-255:eod=256:<|endoftext|>"));
}

std::vector<std::int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size());
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::string ByteTokenizer::decode(std::span<const std::int32_t> ids) const {
  std::string text;
  text.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int32_t id = ids[i];
    if (id == kEod) {
      text += kEodText;
      continue;
    }
    require(id >= 0 && id < 256, "byte tokenizer: id ", id, " at position ", i,
            " is outside [0, ", kVocab, ")");
    text += static_cast<char>(static_cast<unsigned char>(id));
  }
  return text;
}

}  // namespace wiola
