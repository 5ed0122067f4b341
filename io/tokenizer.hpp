#pragma once
// The tokenizer seam. Token files record the tokenizer's name and hash, and the
// data layer only ever talks to this interface, so a BPE tokenizer can slot in
// next to the byte tokenizer without touching readers or writers.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wiola {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string name() const = 0;
  // Stable hex string identifying the vocabulary (and anything else that
  // changes which ids a text maps to). Equal hashes mean interchangeable files.
  virtual std::string hash() const = 0;
  virtual int vocab_size() const = 0;
  virtual std::int32_t eod_id() const = 0;  // end-of-document id
  // Plain text to ids; never produces special ids such as eod_id().
  virtual std::vector<std::int32_t> encode(std::string_view text) const = 0;
  // Ids to text; throws on an id outside [0, vocab_size()).
  virtual std::string decode(std::span<const std::int32_t> ids) const = 0;
};

// The tokenizer a token file's `tokenizer` attribute names ("byte"). Throws,
// listing the known names, on anything else.
std::unique_ptr<Tokenizer> make_tokenizer(std::string_view name);

// 16 hex digits of a 64-bit value: the form of Tokenizer::hash().
std::string hex64(std::uint64_t v);

}  // namespace wiola
