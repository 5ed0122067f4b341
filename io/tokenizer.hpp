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
  // The tokenizer's own file contents when it is data (BPE): token files embed
  // it so they decode without the tokenizer file. Empty for built-in ones.
  virtual std::string model_text() const { return {}; }
  // True when a text cut after a newline and before an ASCII letter or digit
  // encodes, part by part, to the ids of the whole (text_documents.hpp). Long
  // documents are then encoded in parts instead of held whole.
  virtual bool encodes_in_parts() const { return false; }
};

// A built-in tokenizer by the name a token file's `tokenizer` attribute holds
// ("byte"). Throws, listing the known names, on anything else (a BPE
// tokenizer is data: load_tokenizer_file, or the copy a token file embeds).
std::unique_ptr<Tokenizer> make_tokenizer(std::string_view name);

// Reads a tokenizer file (the BPE format of docs/data-format.md), checking its
// hash; errors name the file and line.
std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path);

// A tokenizer from its model text (what model_text() returned); `where`
// names the source in errors.
std::unique_ptr<Tokenizer> tokenizer_from_model_text(std::string_view text,
                                                     const std::string& where);

// 16 hex digits of a 64-bit value: the form of Tokenizer::hash().
std::string hex64(std::uint64_t v);

// A vocabulary known only by its description: imported token files made by
// some other tokenizer (`wiola-data import`). It cannot encode or decode. The
// hash is derived from the name, vocabulary size and end-of-document id, so
// files imported with the same options agree.
class ExternalTokenizer final : public Tokenizer {
 public:
  ExternalTokenizer(std::string name, int vocab_size, std::int32_t eod_id);
  std::string name() const override { return name_; }
  std::string hash() const override { return hash_; }
  int vocab_size() const override { return vocab_; }
  std::int32_t eod_id() const override { return eod_; }
  std::vector<std::int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const std::int32_t> ids) const override;

 private:
  std::string name_, hash_;
  int vocab_;
  std::int32_t eod_;
};

}  // namespace wiola
