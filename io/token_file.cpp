#include "io/token_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <system_error>

#include "core/error.hpp"

namespace wiola {

namespace {

h5::Type token_type(int vocab_size) {
  return vocab_size <= 65535 ? h5::Type::U16 : h5::Type::U32;
}

// Best effort: the data reaches the disk before the rename makes it visible.
void sync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// HDF5 itself is not hardened against crafted files (docs/data-format.md);
// what a token file promises is checked against what it holds before any of
// it is trusted: rank, element type, length, and the bytes stored for it.
void check_dataset(const h5::File& f, const char* name, std::initializer_list<h5::Type> types,
                   std::int64_t expected, const char* attr) {
  require(f.has_dataset(name), f.path(), ": dataset '", name, "' is missing");
  const h5::Dataset ds = f.dataset(name);
  const h5::Shape s = ds.shape();
  require(s.size() == 1, f.path(), ": dataset '", name, "' must be 1-D, it has rank ", s.size());
  require(ds.holds_integers(), f.path(), ": dataset '", name, "' must hold integers");
  const h5::Type t = ds.file_type();
  if (std::find(types.begin(), types.end(), t) == types.end()) {
    std::string allowed;
    for (const h5::Type a : types) allowed += (allowed.empty() ? "" : " or ") + std::string(h5::type_name(a));
    fail(f.path(), ": dataset '", name, "' holds ", h5::type_name(t),
         " values; the format stores it as ", allowed);
  }
  require(s[0] == expected, f.path(), ": dataset '", name, "' has ", s[0],
          " elements but attribute '", attr, "' says ", expected);
  const std::uint64_t need = static_cast<std::uint64_t>(expected) * h5::type_size(t);
  const std::uint64_t stored = ds.storage_bytes();
  require(stored >= need, f.path(), ": dataset '", name, "' stores ", stored, " bytes for its ",
          expected, " elements (", need, " needed): the file is truncated or damaged");
  std::error_code ec;
  const auto file_bytes = std::filesystem::file_size(f.path(), ec);
  require(ec || stored <= file_bytes, f.path(), ": dataset '", name, "' claims ", stored,
          " bytes of storage in a file of ", file_bytes, " bytes");
}

}  // namespace

TokenFileHeader read_token_header(const h5::File& f) {
  const std::string& p = f.path();
  require(f.has_attr("format"), p, ": not a wiola token file (attribute 'format' is missing)");
  const std::string format = f.read_attr_string("format");
  require(format == kTokenFormat, p, ": not a wiola token file (attribute 'format' is '", format,
          "', expected '", kTokenFormat, "')");
  const std::int64_t version = f.read_attr_int("format_version");
  require(version == kTokenFormatVersion, p, ": token-file format version ", version,
          " is not supported (this build reads version ", kTokenFormatVersion, ")");
  TokenFileHeader h;
  const std::int64_t vocab = f.read_attr_int("vocab_size");
  require(vocab > 0 && vocab <= (std::int64_t{1} << 31) - 1, p, ": vocab_size ", vocab,
          " is out of range");
  h.vocab_size = static_cast<int>(vocab);
  const std::int64_t eod = f.read_attr_int("eod_id");
  require(eod >= 0 && eod < vocab, p, ": eod_id ", eod, " is not below vocab_size ", vocab);
  h.eod_id = static_cast<std::int32_t>(eod);
  h.tokenizer = f.read_attr_string("tokenizer");
  h.tokenizer_hash = f.read_attr_string("tokenizer_hash");
  h.n_tokens = f.read_attr_int("n_tokens");
  h.n_documents = f.read_attr_int("n_documents");
  require(h.n_tokens >= 0 && h.n_documents >= 0, p, ": negative n_tokens or n_documents");
  // Every document ends with the end-of-document id, so it holds a token.
  require(h.n_documents <= h.n_tokens && (h.n_tokens == 0) == (h.n_documents == 0), p,
          ": n_documents ", h.n_documents, " does not fit n_tokens ", h.n_tokens);
  check_dataset(f, "tokens", {h5::Type::U16, h5::Type::U32}, h.n_tokens, "n_tokens");
  check_dataset(f, "doc_offsets", {h5::Type::U64}, h.n_documents, "n_documents");
  h.has_tokenizer_model = f.has_dataset(kTokenizerModelDataset);
  return h;
}

std::string read_embedded_tokenizer(const h5::File& f) {
  if (!f.has_dataset(kTokenizerModelDataset)) return {};
  const std::vector<std::uint8_t> bytes = f.read<std::uint8_t>(kTokenizerModelDataset);
  return std::string(bytes.begin(), bytes.end());
}

std::unique_ptr<Tokenizer> tokenizer_for(const h5::File& f, const TokenFileHeader& h,
                                         const std::string& tokenizer_file) {
  std::unique_ptr<Tokenizer> tok;
  std::string source;
  if (!tokenizer_file.empty()) {  // named by the user: it must match, even a byte file
    tok = load_tokenizer_file(tokenizer_file);
    source = tokenizer_file;
  } else if (h.tokenizer == "byte") {
    tok = make_tokenizer(h.tokenizer);
    source = "the built-in byte tokenizer";
  } else if (h.has_tokenizer_model) {
    tok = tokenizer_from_model_text(read_embedded_tokenizer(f),
                                    f.path() + ": dataset 'tokenizer_model'");
    source = "its embedded tokenizer_model";
  } else {
    fail(f.path(), ": tokenizer '", h.tokenizer, "' (hash ", h.tokenizer_hash,
         ") is not built in and the file embeds no tokenizer_model; give the tokenizer file "
         "(--tokenizer FILE)");
  }
  require(tok->hash() == h.tokenizer_hash && tok->name() == h.tokenizer, f.path(),
          ": tokenizer '", h.tokenizer, "' with hash ", h.tokenizer_hash, " does not match ",
          source, " ('", tok->name(), "', hash ", tok->hash(), ")");
  require(tok->vocab_size() == h.vocab_size && tok->eod_id() == h.eod_id, f.path(),
          ": vocab_size ", h.vocab_size, " / eod_id ", h.eod_id, " disagree with ", source, " (",
          tok->vocab_size(), " / ", tok->eod_id(), ")");
  return tok;
}

TokenFileWriter::TokenFileWriter(std::string path, const Tokenizer& tokenizer)
    : path_(std::move(path)), tmp_(path_ + ".tmp"), model_text_(tokenizer.model_text()) {
  header_.vocab_size = tokenizer.vocab_size();
  header_.eod_id = tokenizer.eod_id();
  header_.tokenizer = tokenizer.name();
  header_.tokenizer_hash = tokenizer.hash();
  require(header_.vocab_size > 0, path_, ": tokenizer '", header_.tokenizer,
          "' has vocab_size ", header_.vocab_size);
  require(header_.eod_id >= 0 && header_.eod_id < header_.vocab_size, path_,
          ": tokenizer's eod_id ", header_.eod_id, " is not below vocab_size ",
          header_.vocab_size);
  file_ = h5::File::create(tmp_);
  try {
    tokens_ = file_.create_extendible("tokens", token_type(header_.vocab_size), kTokenChunk);
    offsets_ = file_.create_extendible("doc_offsets", h5::Type::U64, kOffsetChunk);
  } catch (...) {
    // The destructor does not run for a constructor that throws.
    tokens_ = {};
    file_ = {};
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
    throw;
  }
  token_buf_.reserve(static_cast<std::size_t>(2 * kTokenChunk));
}

TokenFileWriter::~TokenFileWriter() {
  if (finished_) return;
  tokens_ = {};
  offsets_ = {};
  file_ = {};
  std::error_code ec;
  std::filesystem::remove(tmp_, ec);
}

void TokenFileWriter::check(std::span<const std::int32_t> ids, std::int64_t first_pos) const {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int32_t id = ids[i];
    const std::int64_t pos = first_pos + static_cast<std::int64_t>(i);
    require(id >= 0 && id < header_.vocab_size, path_, ": document ", n_docs_, ": token id ", id,
            " at position ", pos, " is outside [0, vocab_size ", header_.vocab_size, ")");
    require(id != header_.eod_id, path_, ": document ", n_docs_, ": token id ", id,
            " at position ", pos, " is the end-of-document id");
  }
}

void TokenFileWriter::add_document(std::span<const std::int32_t> ids) {
  require(!finished_, path_, ": add_document after finish");
  require(!doc_open_, path_, ": add_document while a streamed document is open");
  check(ids, 0);
  push(ids);
  end_document();
}

void TokenFileWriter::append_tokens(std::span<const std::int32_t> ids) {
  require(!finished_, path_, ": append_tokens after finish");
  check(ids, doc_tokens_);
  push(ids);
}

void TokenFileWriter::push(std::span<const std::int32_t> ids) {
  if (ids.empty()) return;  // a document opens with its first token (or at end_document)
  if (!doc_open_) offset_buf_.push_back(static_cast<std::uint64_t>(n_tokens_));
  doc_open_ = true;
  token_buf_.insert(token_buf_.end(), ids.begin(), ids.end());
  n_tokens_ += static_cast<std::int64_t>(ids.size());
  doc_tokens_ += static_cast<std::int64_t>(ids.size());
  flush(false);
}

void TokenFileWriter::end_document() {
  require(!finished_, path_, ": end_document after finish");
  if (!doc_open_) offset_buf_.push_back(static_cast<std::uint64_t>(n_tokens_));
  token_buf_.push_back(static_cast<std::uint32_t>(header_.eod_id));
  ++n_tokens_;
  ++n_docs_;
  doc_tokens_ = 0;
  doc_open_ = false;
  flush(false);
}

// Writes whole chunks (all of the buffers when `all`), so every write but the
// last fills chunks exactly.
void TokenFileWriter::flush(bool all) {
  const auto whole = [all](std::size_t n, std::int64_t chunk) {
    return all ? n : n - n % static_cast<std::size_t>(chunk);
  };
  const std::size_t nt = whole(token_buf_.size(), kTokenChunk);
  if (nt > 0) {
    tokens_.append(std::span<const std::uint32_t>(token_buf_.data(), nt));
    token_buf_.erase(token_buf_.begin(), token_buf_.begin() + static_cast<std::ptrdiff_t>(nt));
  }
  const std::size_t no = whole(offset_buf_.size(), kOffsetChunk);
  if (no > 0) {
    offsets_.append(std::span<const std::uint64_t>(offset_buf_.data(), no));
    offset_buf_.erase(offset_buf_.begin(), offset_buf_.begin() + static_cast<std::ptrdiff_t>(no));
  }
}

void TokenFileWriter::finish() {
  require(!finished_, path_, ": finish called twice");
  require(n_docs_ > 0, path_, ": no documents were added");
  require(!doc_open_, path_, ": finish while a streamed document is open");
  flush(true);
  if (!model_text_.empty()) {
    const std::span<const std::uint8_t> bytes(
        reinterpret_cast<const std::uint8_t*>(model_text_.data()), model_text_.size());
    file_.write<std::uint8_t>(kTokenizerModelDataset, {static_cast<std::int64_t>(bytes.size())},
                              bytes);
  }
  file_.write_attr_string("format", kTokenFormat);
  file_.write_attr_int("format_version", kTokenFormatVersion);
  file_.write_attr_int("vocab_size", header_.vocab_size);
  file_.write_attr_string("tokenizer", header_.tokenizer);
  file_.write_attr_string("tokenizer_hash", header_.tokenizer_hash);
  file_.write_attr_int("eod_id", header_.eod_id);
  file_.write_attr_int("n_tokens", n_tokens_);
  file_.write_attr_int("n_documents", n_docs_);
  tokens_ = {};
  offsets_ = {};
  file_.close();
  sync_file(tmp_);
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  require(!ec, path_, ": cannot rename ", tmp_, " onto it: ", ec.message());
  finished_ = true;
}

}  // namespace wiola
