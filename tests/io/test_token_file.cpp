#include <gtest/gtest.h>

#include <filesystem>

#include "io/bpe_tokenizer.hpp"
#include "io/byte_tokenizer.hpp"
#include "io/token_dataset.hpp"
#include "io/h5.hpp"
#include "io/token_file.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

namespace fs = std::filesystem;

TEST(TokenFile, RoundTripBytes) {
  test::TempDir dir;
  const std::string path = dir.file("t.h5");
  const ByteTokenizer tok;
  const std::vector<std::string> docs = {"hello", "", "a\nb%"};
  {
    TokenFileWriter w(path, tok);
    for (const auto& d : docs) w.add_document(tok.encode(d));
    EXPECT_EQ(w.n_documents(), 3);
    EXPECT_EQ(w.n_tokens(), 5 + 1 + 0 + 1 + 4 + 1);
    w.finish();
  }
  const h5::File f = h5::File::open_read(path);
  const TokenFileHeader h = read_token_header(f);
  EXPECT_EQ(h.vocab_size, 257);
  EXPECT_EQ(h.eod_id, 256);
  EXPECT_EQ(h.tokenizer, "byte");
  EXPECT_EQ(h.tokenizer_hash, tok.hash());
  EXPECT_EQ(h.n_tokens, 12);
  EXPECT_EQ(h.n_documents, 3);
  EXPECT_EQ(f.read_attr_string("format"), "wiola-tokens");
  EXPECT_EQ(f.read_attr_int("format_version"), 1);
  EXPECT_EQ(f.file_type("tokens"), h5::Type::U16);
  EXPECT_EQ(f.file_type("doc_offsets"), h5::Type::U64);
  const auto tokens = f.read<std::int32_t>("tokens");
  std::vector<std::int32_t> want;
  for (const auto& d : docs) {
    for (auto id : tok.encode(d)) want.push_back(id);
    want.push_back(256);
  }
  EXPECT_EQ(tokens, want);
  EXPECT_EQ(f.read<std::uint64_t>("doc_offsets"), (std::vector<std::uint64_t>{0, 6, 7}));
}

TEST(TokenFile, LargeVocabUsesUint32AndSpansChunks) {
  test::TempDir dir;
  const std::string path = dir.file("big.h5");
  const test::FakeTokenizer tok(70000, 69999);
  std::vector<std::int32_t> doc(150000);
  for (std::size_t i = 0; i < doc.size(); ++i) doc[i] = static_cast<std::int32_t>(i % 69999);
  {
    TokenFileWriter w(path, tok);
    w.add_document(doc);
    for (int k = 0; k < 9000; ++k) w.add_document(std::vector<std::int32_t>{65536 + k % 100});
    w.finish();
  }
  const h5::File f = h5::File::open_read(path);
  EXPECT_EQ(f.file_type("tokens"), h5::Type::U32);
  const auto tokens = f.read<std::int32_t>("tokens");
  ASSERT_EQ(tokens.size(), doc.size() + 1 + 9000 * 2);
  for (std::size_t i = 0; i < doc.size(); ++i) ASSERT_EQ(tokens[i], doc[i]) << i;
  EXPECT_EQ(tokens[doc.size()], 69999);
  EXPECT_EQ(tokens[doc.size() + 1], 65536);
  const auto offsets = f.read<std::uint64_t>("doc_offsets");
  ASSERT_EQ(offsets.size(), 9001u);
  EXPECT_EQ(offsets[1], doc.size() + 1);
  EXPECT_EQ(offsets[9000], doc.size() + 1 + 2 * 8999);
}

TEST(TokenFile, WritesTempThenRenames) {
  test::TempDir dir;
  const std::string path = dir.file("t.h5");
  const ByteTokenizer tok;
  TokenFileWriter w(path, tok);
  EXPECT_EQ(w.temp_path(), path + ".tmp");
  w.add_document(tok.encode("abc"));
  EXPECT_TRUE(fs::exists(path + ".tmp"));
  EXPECT_FALSE(fs::exists(path));
  w.finish();
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_ERROR(w.finish(), "finish called twice");
}

TEST(TokenFile, UnfinishedWriterLeavesNoFileAndKeepsTheOldOne) {
  test::TempDir dir;
  const std::string path = dir.file("t.h5");
  const ByteTokenizer tok;
  {
    TokenFileWriter w(path, tok);
    w.add_document(tok.encode("abandoned"));
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  {
    TokenFileWriter good(path, tok);
    good.add_document(tok.encode("good"));
    good.finish();
  }
  {
    TokenFileWriter w(path, tok);
    w.add_document(tok.encode("a much longer replacement that never finishes"));
  }
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  const h5::File f = h5::File::open_read(path);
  EXPECT_EQ(read_token_header(f).n_tokens, 5);
}

TEST(TokenFile, RejectsBadIds) {
  test::TempDir dir;
  const std::string path = dir.file("t.h5");
  const ByteTokenizer tok;
  TokenFileWriter w(path, tok);
  w.add_document(tok.encode("ok"));
  EXPECT_ERROR(w.add_document(std::vector<std::int32_t>{1, 2, 300}), "t.h5", "document 1",
               "token id 300 at position 2", "vocab_size 257");
  EXPECT_ERROR(w.add_document(std::vector<std::int32_t>{-4}), "token id -4");
  EXPECT_ERROR(w.add_document(std::vector<std::int32_t>{7, 256}), "end-of-document");
  EXPECT_EQ(w.n_tokens(), 3);  // rejected documents left nothing behind
  EXPECT_EQ(w.n_documents(), 1);
  w.finish();
  const h5::File f = h5::File::open_read(path);
  EXPECT_EQ(f.read<std::int32_t>("tokens"), (std::vector<std::int32_t>{'o', 'k', 256}));
}

TEST(TokenFile, EmptyFileIsAnError) {
  test::TempDir dir;
  const ByteTokenizer tok;
  TokenFileWriter w(dir.file("e.h5"), tok);
  EXPECT_ERROR(w.finish(), "e.h5: no documents were added");
}

TEST(TokenFile, StreamsLongDocumentsInParts) {
  test::TempDir dir;
  const std::string path = dir.file("s.h5");
  const test::FakeTokenizer tok(100, 99);
  {
    TokenFileWriter w(path, tok);
    w.append_tokens(std::vector<std::int32_t>{1, 2});
    EXPECT_TRUE(w.in_document());
    w.append_tokens(std::vector<std::int32_t>{});
    w.append_tokens(std::vector<std::int32_t>{3});
    w.end_document();
    w.end_document();  // an empty document
    EXPECT_ERROR(w.append_tokens(std::vector<std::int32_t>{5, 100}), "document 2: token id 100 at position 1");
    w.append_tokens(std::vector<std::int32_t>{5});
    EXPECT_ERROR(w.finish(), "streamed document is open");
    EXPECT_ERROR(w.add_document(std::vector<std::int32_t>{1}), "streamed document is open");
    EXPECT_ERROR(w.append_tokens(std::vector<std::int32_t>{99}), "document 2: token id 99 at position 1",
                 "end-of-document id");
    w.end_document();
    w.finish();
  }
  const h5::File f = h5::File::open_read(path);
  EXPECT_EQ(f.read<std::int32_t>("tokens"), (std::vector<std::int32_t>{1, 2, 3, 99, 99, 5, 99}));
  EXPECT_EQ(f.read<std::uint64_t>("doc_offsets"), (std::vector<std::uint64_t>{0, 4, 5}));
  EXPECT_FALSE(read_token_header(f).has_tokenizer_model);
}

TEST(TokenFile, EmbedsABpeTokenizerAndFindsTheOneToDecodeWith) {
  test::TempDir dir;
  const BpeTokenizer bpe({{97, 98}, {260, 99}});
  const std::string path = dir.file("b.h5");
  {
    TokenFileWriter w(path, bpe);
    w.add_document(bpe.encode("abc ab"));
    w.finish();
  }
  const h5::File f = h5::File::open_read(path);
  const TokenFileHeader h = read_token_header(f);
  EXPECT_TRUE(h.has_tokenizer_model);
  EXPECT_EQ(h.tokenizer, "bpe");
  EXPECT_EQ(read_embedded_tokenizer(f), bpe.serialize());
  const auto tok = tokenizer_for(f, h);
  EXPECT_EQ(tok->decode(f.read<std::int32_t>("tokens")), "abc ab<|endoftext|>");
  // A tokenizer file given by hand must be the file's own.
  bpe.save(dir.file("same.bpe"));
  EXPECT_EQ(tokenizer_for(f, h, dir.file("same.bpe"))->hash(), bpe.hash());
  BpeTokenizer({{97, 98}}).save(dir.file("other.bpe"));
  EXPECT_ERROR(tokenizer_for(f, h, dir.file("other.bpe")), "b.h5: tokenizer 'bpe' with hash",
               "does not match", "other.bpe");
  // A BPE file without its model (an older writer) needs --tokenizer.
  TokenFileHeader stripped = h;
  stripped.has_tokenizer_model = false;
  EXPECT_ERROR(tokenizer_for(f, stripped), "embeds no tokenizer_model", "--tokenizer FILE");
  const ByteTokenizer byte;
  const std::string bp = dir.file("byte.h5");
  {
    TokenFileWriter w(bp, byte);
    w.add_document(byte.encode("x"));
    w.finish();
  }
  const h5::File fb = h5::File::open_read(bp);
  EXPECT_EQ(tokenizer_for(fb, read_token_header(fb))->name(), "byte");
}

TEST(TokenFile, TruncatedOrForeignFilesAreClearErrors) {
  test::TempDir dir;
  const std::string path = dir.file("t.h5");
  const test::FakeTokenizer tok(1000, 999);
  std::vector<std::int32_t> doc(200000);
  for (std::size_t i = 0; i < doc.size(); ++i) doc[i] = static_cast<std::int32_t>(i % 999);
  {
    TokenFileWriter w(path, tok);
    w.add_document(doc);
    w.finish();
  }
  const auto size = fs::file_size(path);
  fs::resize_file(path, size / 2);
  try {
    const TokenDataset d(std::vector<std::string>{path}, 16);
    std::vector<std::int32_t> win(17);
    d.read_window(d.num_windows() - 1, win.data());
    ADD_FAILURE() << "a truncated file was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.h5"), std::string::npos) << e.what();
  }
  fs::resize_file(path, 100);
  EXPECT_ERROR(TokenDataset(std::vector<std::string>{path}, 16), "t.h5");
  test::write_text(dir.file("text.h5"), "just text");
  EXPECT_ERROR(TokenDataset(std::vector<std::string>{dir.file("text.h5")}, 16), "text.h5: not an HDF5 file");
}

}  // namespace
}  // namespace wiola
