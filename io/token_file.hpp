#pragma once
// The token-file format (docs/data-format.md): dataset `tokens` (1-D, uint16
// when vocab_size <= 65535, else uint32; chunked, uncompressed), dataset
// `doc_offsets` (1-D uint64, where each document starts; each document ends
// with the end-of-document id) and root attributes describing the tokenizer.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/h5.hpp"
#include "io/tokenizer.hpp"

namespace wiola {

inline constexpr const char* kTokenFormat = "wiola-tokens";
inline constexpr std::int64_t kTokenFormatVersion = 1;
inline constexpr std::int64_t kTokenChunk = 64 * 1024;   // elements per `tokens` chunk
inline constexpr std::int64_t kOffsetChunk = 8 * 1024;   // elements per `doc_offsets` chunk
inline constexpr const char* kTokenizerModelDataset = "tokenizer_model";

struct TokenFileHeader {
  int vocab_size = 0;
  std::int32_t eod_id = 0;
  std::string tokenizer;
  std::string tokenizer_hash;
  std::int64_t n_tokens = 0;
  std::int64_t n_documents = 0;
  bool has_tokenizer_model = false;  // dataset `tokenizer_model` is present
};

// Checks that `f` is a token file this build understands (format, version,
// attributes, datasets and their lengths) and returns its header. Every error
// names the file.
TokenFileHeader read_token_header(const h5::File& f);

// The embedded tokenizer file text (dataset `tokenizer_model`), or "".
std::string read_embedded_tokenizer(const h5::File& f);

// The tokenizer that decodes `f`: the file `tokenizer_file` when given (it
// must match, whatever the file names), else the built-in one its `tokenizer`
// attribute names, else the embedded model.
// Its hash must equal the file's `tokenizer_hash`. Errors say what to pass.
std::unique_ptr<Tokenizer> tokenizer_for(const h5::File& f, const TokenFileHeader& h,
                                         const std::string& tokenizer_file = "");

// Writes a token file document by document. Everything goes to `path + ".tmp"`
// and is renamed onto `path` only by finish(); a writer destroyed without
// finish() (an exception, a crash in a caller) removes its temp file, so a
// half-written file never replaces a good one.
class TokenFileWriter {
 public:
  TokenFileWriter(std::string path, const Tokenizer& tokenizer);
  TokenFileWriter(const TokenFileWriter&) = delete;
  TokenFileWriter& operator=(const TokenFileWriter&) = delete;
  ~TokenFileWriter();

  // Appends one document and its end-of-document id. Ids must lie in
  // [0, vocab_size) and must not be the end-of-document id itself; a rejected
  // document leaves the file unchanged.
  void add_document(std::span<const std::int32_t> ids);
  // The same in parts, for documents too long to hold in memory: any number
  // of append_tokens (each checked whole before it is taken), then
  // end_document().
  void append_tokens(std::span<const std::int32_t> ids);
  void end_document();
  bool in_document() const { return doc_open_; }
  // Flushes, writes the attributes and renames the temp file onto the target.
  // Throws when no document was added.
  void finish();

  std::int64_t n_tokens() const { return n_tokens_; }
  std::int64_t n_documents() const { return n_docs_; }
  const std::string& temp_path() const { return tmp_; }

 private:
  void flush(bool all);
  void check(std::span<const std::int32_t> ids, std::int64_t first_pos) const;
  void push(std::span<const std::int32_t> ids);  // checked already
  std::string path_, tmp_;
  std::string model_text_;
  TokenFileHeader header_;
  h5::File file_;
  h5::Dataset tokens_, offsets_;
  std::vector<std::uint32_t> token_buf_;
  std::vector<std::uint64_t> offset_buf_;
  std::int64_t n_tokens_ = 0, n_docs_ = 0;
  std::int64_t doc_tokens_ = 0;  // tokens of the open document so far
  bool doc_open_ = false;
  bool finished_ = false;
};

}  // namespace wiola
