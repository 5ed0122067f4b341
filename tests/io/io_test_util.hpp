#pragma once
// Helpers shared by the io tests: a fresh temporary directory, and assertions
// on the message of a thrown wiola::Error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "io/tokenizer.hpp"

namespace wiola::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "wiola-io-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A tokenizer with an arbitrary vocabulary: encode() is not used by the tests.
class FakeTokenizer final : public Tokenizer {
 public:
  FakeTokenizer(int vocab, std::int32_t eod, std::string name = "fake")
      : vocab_(vocab), eod_(eod), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::string hash() const override { return name_ + "-" + std::to_string(vocab_); }
  int vocab_size() const override { return vocab_; }
  std::int32_t eod_id() const override { return eod_; }
  std::vector<std::int32_t> encode(std::string_view) const override { return {}; }
  std::string decode(std::span<const std::int32_t>) const override { return {}; }

 private:
  int vocab_;
  std::int32_t eod_;
  std::string name_;
};

}  // namespace wiola::test

// EXPECT_ERROR(stmt, "part one", "part two"): stmt throws wiola::Error whose
// message contains every part.
#define EXPECT_ERROR(stmt, ...)                                              \
  do {                                                                       \
    try {                                                                    \
      stmt;                                                                  \
      ADD_FAILURE() << "expected wiola::Error from " #stmt;                  \
    } catch (const wiola::Error& e_) {                                       \
      const std::string msg_ = e_.what();                                    \
      for (const char* part_ : {__VA_ARGS__})                                \
        EXPECT_NE(msg_.find(part_), std::string::npos)                       \
            << "message \"" << msg_ << "\" lacks \"" << part_ << "\"";      \
    }                                                                        \
  } while (0)

#include <numeric>

#include "io/token_file.hpp"

namespace wiola::test {

// A token file of documents (ids without their end-of-document id).
inline std::string write_docs(const std::string& path, const Tokenizer& tok,
                              const std::vector<std::vector<std::int32_t>>& docs) {
  TokenFileWriter w(path, tok);
  for (const auto& d : docs) w.add_document(d);
  w.finish();
  return path;
}

// `n_docs` documents of `len` ids each (len - 1 ids plus the eod); document
// d's ids are d * len + i, so every token says where it came from (with a
// vocabulary large enough).
inline std::string numbered_docs(const std::string& path, const Tokenizer& tok, int n_docs,
                                 int len) {
  std::vector<std::vector<std::int32_t>> docs(static_cast<std::size_t>(n_docs));
  for (int d = 0; d < n_docs; ++d) {
    docs[static_cast<std::size_t>(d)].resize(static_cast<std::size_t>(len - 1));
    std::iota(docs[static_cast<std::size_t>(d)].begin(), docs[static_cast<std::size_t>(d)].end(),
              d * len);
  }
  return write_docs(path, tok, docs);
}

}  // namespace wiola::test
