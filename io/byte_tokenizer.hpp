#pragma once
// Ids 0..255 are the bytes of the text; 256 is <|endoftext|>, the
// end-of-document id. Any byte string round-trips (no UTF-8 assumptions).
#include "io/tokenizer.hpp"

namespace wiola {

class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr const char* kName = "byte";
  static constexpr std::int32_t kEod = 256;
  static constexpr int kVocab = 257;

  std::string name() const override { return kName; }
  std::string hash() const override;
  int vocab_size() const override { return kVocab; }
  std::int32_t eod_id() const override { return kEod; }
  std::vector<std::int32_t> encode(std::string_view text) const override;
  bool encodes_in_parts() const override { return true; }
  std::string decode(std::span<const std::int32_t> ids) const override;
};

}  // namespace wiola
