#pragma once
// Byte-level BPE ("bpe", docs/data-format.md). Ids 0..255 are the bytes (byte
// fallback: any text encodes, no unknown token), 256..259 the special tokens
// <|endoftext|> (the end-of-document id), <|user|>, <|assistant|>, <|end|>, and
// id 260 + i is the token made by merge i from two earlier tokens. Encoding:
// check UTF-8, NFC-normalise, cut into pieces (pretokenizer.hpp), and in each
// piece merge repeatedly the adjacent pair of lowest merge index. Plain text
// never encodes to a special id (the text "<|end|>" is ordinary bytes).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/tokenizer.hpp"

namespace wiola {

struct BpeMerge {
  std::int32_t left = 0, right = 0;
  bool operator==(const BpeMerge&) const = default;
};

class BpeTokenizer final : public Tokenizer {
 public:
  static constexpr const char* kName = "bpe";
  static constexpr std::int32_t kEod = 256;
  static constexpr std::int32_t kFirstMerge = 260;
  static constexpr std::array<std::string_view, 4> kSpecials = {
      "<|endoftext|>", "<|user|>", "<|assistant|>", "<|end|>"};

  // Checks every merge: both parts are earlier tokens that are not special,
  // and no pair is merged twice.
  explicit BpeTokenizer(std::vector<BpeMerge> merges);

  // The tokenizer file format; `where` (a path) names errors with a line.
  static BpeTokenizer parse(std::string_view text, const std::string& where);
  std::string serialize() const;
  // Written to path + ".tmp", then renamed.
  void save(const std::string& path) const;

  std::string name() const override { return kName; }
  std::string hash() const override { return hash_; }
  int vocab_size() const override { return static_cast<int>(tokens_.size()); }
  std::int32_t eod_id() const override { return kEod; }
  // Throws on ill-formed UTF-8, naming the byte offset.
  std::vector<std::int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const std::int32_t> ids) const override;
  bool encodes_in_parts() const override { return true; }
  std::string model_text() const override { return serialize(); }

  // Appends the ids of one piece (no normalisation, no splitting).
  void encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const;
  const std::vector<BpeMerge>& merges() const { return merges_; }
  const std::string& token_bytes(std::int32_t id) const { return tokens_.at(static_cast<std::size_t>(id)); }
  // The special token's id, or -1.
  static std::int32_t special_id(std::string_view text);

 private:
  std::int32_t rank(std::int32_t a, std::int32_t b) const;
  std::vector<BpeMerge> merges_;
  std::vector<std::string> tokens_;                      // bytes of every id
  std::unordered_map<std::uint64_t, std::int32_t> rank_;  // (left << 32 | right) -> merge index
  std::string hash_;
  std::uint64_t instance_;  // keys the per-thread cache of encoded pieces
};

}  // namespace wiola
