#include <gtest/gtest.h>

#include <numeric>

#include "io/byte_tokenizer.hpp"
#include "io/h5.hpp"
#include "io/token_dataset.hpp"
#include "io/token_file.hpp"
#include "io_test_util.hpp"
#include "support/hollow_dataset.hpp"

namespace wiola {
namespace {

constexpr int kVocab = 5000;
constexpr std::int32_t kEod = 4999;

// A file whose token stream is 0, 1, ..., n-2, eod (one document).
std::string counting_file(const test::TempDir& dir, const std::string& name, int n,
                          const Tokenizer& tok) {
  const std::string path = dir.file(name);
  std::vector<std::int32_t> doc(static_cast<std::size_t>(n - 1));
  std::iota(doc.begin(), doc.end(), 0);
  TokenFileWriter w(path, tok);
  w.add_document(doc);
  w.finish();
  return path;
}

// Writes a token file by hand so that tests can break any part of it.
struct RawFile {
  std::vector<std::uint16_t> tokens;
  std::string format = "wiola-tokens";
  std::int64_t version = 1;
  std::int64_t vocab = 257;
  bool with_offsets = true;
  bool with_vocab = true;
  h5::Type token_type = h5::Type::U16;     // as stored in the file
  h5::Type offset_type = h5::Type::U64;
  bool tokens_unwritten = false;            // the dataset's extent, but no data stored
  std::int64_t n_documents = 1;

  void write(const std::string& path) const {
    {
      h5::File f = h5::File::create(path);
      if (!tokens_unwritten) {
        std::vector<std::int64_t> wide(tokens.begin(), tokens.end());
        f.write<std::int64_t>("tokens", {static_cast<std::int64_t>(tokens.size())}, wide, token_type);
      }
      if (with_offsets)
        f.write<std::int64_t>("doc_offsets", {1}, std::vector<std::int64_t>{0}, offset_type);
      f.write_attr_string("format", format);
      f.write_attr_int("format_version", version);
      if (with_vocab) f.write_attr_int("vocab_size", vocab);
      f.write_attr_string("tokenizer", "byte");
      f.write_attr_string("tokenizer_hash", ByteTokenizer().hash());
      f.write_attr_int("eod_id", 256);
      f.write_attr_int("n_tokens", static_cast<std::int64_t>(tokens.size()));
      f.write_attr_int("n_documents", n_documents);
    }
    if (tokens_unwritten) test::add_hollow_dataset(path, "tokens", tokens.size(), H5T_STD_U16LE);
  }
};

TEST(TokenDataset, WindowsAcrossTwoFiles) {
  test::TempDir dir;
  const test::FakeTokenizer tok(kVocab, kEod);
  const std::string a = counting_file(dir, "a.h5", 25, tok);
  const std::string b = counting_file(dir, "b.h5", 10, tok);
  const int T = 4;
  const TokenDataset ds({a, b}, T);
  EXPECT_EQ(ds.num_tokens(), 35);
  EXPECT_EQ(ds.num_windows(), (25 - 1) / T + (10 - 1) / T);  // 6 + 2
  EXPECT_EQ(ds.vocab_size(), kVocab);
  EXPECT_EQ(ds.eod_id(), kEod);
  EXPECT_EQ(ds.tokenizer(), "fake");
  EXPECT_EQ(ds.num_files(), 2u);

  std::vector<std::int32_t> win(T + 1), prev(T + 1);
  for (std::int64_t w = 0; w < ds.num_windows(); ++w) {
    ds.read_window(w, win.data());
    const bool in_a = w < 6;
    const std::int64_t k = in_a ? w : w - 6;
    for (int i = 0; i <= T; ++i) {
      const std::int64_t pos = k * T + i;  // position in its file
      const std::int64_t n = in_a ? 25 : 10;
      const std::int32_t want = pos == n - 1 ? kEod : static_cast<std::int32_t>(pos);
      EXPECT_EQ(win[static_cast<std::size_t>(i)], want) << "window " << w << " slot " << i;
    }
    // Consecutive windows of one file share exactly one token.
    if (w != 0 && w != 6) {
      EXPECT_EQ(win[0], prev[T]);
      EXPECT_NE(win[1], prev[T]);
    }
    prev = win;
  }
  // The last window of a ends at its final token (the eod); b starts afresh.
  ds.read_window(5, win.data());
  EXPECT_EQ(win[T], kEod);
  ds.read_window(6, win.data());
  EXPECT_EQ(win[0], 0);
  EXPECT_ERROR(ds.read_window(8, win.data()), "window 8 is outside [0, 8)");
  EXPECT_ERROR(ds.read_window(-1, win.data()), "window -1");
}

TEST(TokenDataset, ExactlyOneWindow) {
  test::TempDir dir;
  const test::FakeTokenizer tok(kVocab, kEod);
  const std::string a = counting_file(dir, "a.h5", 9, tok);
  EXPECT_EQ(TokenDataset({a}, 8).num_windows(), 1);
  EXPECT_EQ(TokenDataset({a}, 4).num_windows(), 2);
  EXPECT_EQ(TokenDataset({a}, 3).num_windows(), 2);  // tokens 0..3, 3..6; 6..9 does not fit
}

TEST(TokenDataset, FileErrors) {
  test::TempDir dir;
  const std::string missing = dir.file("missing.h5");
  EXPECT_ERROR(TokenDataset({missing}, 4), "missing.h5: no such file");

  const std::string text = dir.file("notes.h5");
  test::write_text(text, "just some text\n");
  EXPECT_ERROR(TokenDataset({text}, 4), "notes.h5: not an HDF5 file");

  RawFile wrong_format;
  wrong_format.tokens.assign(20, 1);
  wrong_format.format = "something-else";
  wrong_format.write(dir.file("fmt.h5"));
  EXPECT_ERROR(TokenDataset({dir.file("fmt.h5")}, 4), "fmt.h5", "not a wiola token file",
               "something-else");

  h5::File plain = h5::File::create(dir.file("plain.h5"));
  plain.write<float>("x", {1}, std::vector<float>{1});
  plain.close();
  EXPECT_ERROR(TokenDataset({dir.file("plain.h5")}, 4), "plain.h5", "not a wiola token file",
               "'format' is missing");

  RawFile version = wrong_format;
  version.format = "wiola-tokens";
  version.version = 2;
  version.write(dir.file("v2.h5"));
  EXPECT_ERROR(TokenDataset({dir.file("v2.h5")}, 4), "v2.h5", "version 2");

  RawFile no_offsets = version;
  no_offsets.version = 1;
  no_offsets.with_offsets = false;
  no_offsets.write(dir.file("nooff.h5"));
  EXPECT_ERROR(TokenDataset({dir.file("nooff.h5")}, 4), "nooff.h5: dataset 'doc_offsets' is missing");

  RawFile no_vocab = version;
  no_vocab.version = 1;
  no_vocab.with_vocab = false;
  no_vocab.write(dir.file("novocab.h5"));
  EXPECT_ERROR(TokenDataset({dir.file("novocab.h5")}, 4),
               "novocab.h5: attribute 'vocab_size' is missing");

  // n_tokens disagreeing with the dataset.
  RawFile good = version;
  good.version = 1;
  good.write(dir.file("good.h5"));
  {
    h5::File f = h5::File::open_rw(dir.file("good.h5"));
    f.write_attr_int("n_tokens", 99);
  }
  EXPECT_ERROR(TokenDataset({dir.file("good.h5")}, 4), "good.h5", "dataset 'tokens' has 20",
               "n_tokens", "99");
}

// HDF5 opens a file that lies about its contents; the token-file checks
// refuse it by name before anything is read from it.
TEST(TokenDataset, AFileThatLiesIsRefusedByName) {
  test::TempDir dir;
  RawFile good;
  good.tokens = {1, 2, 3, 4, 5, 6, 7, 256};
  good.write(dir.file("good.h5"));
  EXPECT_NO_THROW(TokenDataset({dir.file("good.h5")}, 4));

  RawFile signed_ids = good;
  signed_ids.token_type = h5::Type::I32;
  signed_ids.write(dir.file("signed.h5"));
  EXPECT_ERROR(TokenDataset({dir.file("signed.h5")}, 4),
               "signed.h5: dataset 'tokens' holds int32 values; the format stores it as uint16 or uint32");

  RawFile signed_offsets = good;
  signed_offsets.offset_type = h5::Type::I64;
  signed_offsets.write(dir.file("offsets.h5"));
  EXPECT_ERROR(TokenDataset({dir.file("offsets.h5")}, 4),
               "offsets.h5: dataset 'doc_offsets' holds int64 values; the format stores it as uint64");

  RawFile unwritten = good;
  unwritten.tokens.assign(1000, 1);
  unwritten.tokens_unwritten = true;
  unwritten.write(dir.file("hollow.h5"));
  EXPECT_ERROR(TokenDataset({dir.file("hollow.h5")}, 4),
               "hollow.h5: dataset 'tokens' stores 0 bytes for its 1000 elements (2000 needed)");

  RawFile more_docs = good;
  more_docs.n_documents = 9;
  more_docs.write(dir.file("docs.h5"));
  EXPECT_ERROR(TokenDataset({dir.file("docs.h5")}, 4),
               "docs.h5: n_documents 9 does not fit n_tokens 8");
}

TEST(TokenDataset, FilesMustAgree) {
  test::TempDir dir;
  const test::FakeTokenizer base(kVocab, kEod);
  const std::string a = counting_file(dir, "a.h5", 20, base);
  const test::FakeTokenizer vocab(kVocab + 1, kEod);
  const std::string b = counting_file(dir, "b.h5", 20, vocab);
  EXPECT_ERROR(TokenDataset({a, b}, 4), "b.h5: vocab_size 5001 differs from", "a.h5");
  const test::FakeTokenizer eod(kVocab, 0);
  const std::string c = dir.file("c.h5");
  {
    TokenFileWriter w(c, eod);
    std::vector<std::int32_t> doc(30, 5);
    w.add_document(doc);
    w.finish();
  }
  EXPECT_ERROR(TokenDataset({a, c}, 4), "c.h5: eod_id 0 differs from", "a.h5");
  const test::FakeTokenizer other(kVocab, kEod, "other");
  const std::string d = counting_file(dir, "d.h5", 20, other);
  EXPECT_ERROR(TokenDataset({a, d}, 4), "d.h5: tokenizer 'other'", "differs from", "a.h5",
               "'fake'");
}

TEST(TokenDataset, TooFewTokens) {
  test::TempDir dir;
  const test::FakeTokenizer tok(kVocab, kEod);
  const std::string a = counting_file(dir, "a.h5", 20, tok);
  const std::string small = counting_file(dir, "small.h5", 4, tok);
  EXPECT_ERROR(TokenDataset({a, small}, 4), "small.h5: has 4 tokens",
               "fewer than one window of T+1 = 5");
  EXPECT_ERROR(TokenDataset(std::vector<std::string>{}, 4), "no files");
  EXPECT_ERROR(TokenDataset({a}, 0), "seq_len");
}

TEST(TokenDataset, IdAboveVocabIsReportedWithItsPosition) {
  test::TempDir dir;
  RawFile raw;
  raw.tokens.assign(20000, 'x');
  raw.tokens[12345] = 300;
  raw.write(dir.file("bad.h5"));
  const int T = 100;
  const TokenDataset ds({dir.file("bad.h5")}, T);
  std::vector<std::int32_t> win(T + 1);
  ds.read_window(0, win.data());  // clean windows read fine
  EXPECT_EQ(win[0], 'x');
  EXPECT_ERROR(ds.read_window(12345 / T, win.data()), "bad.h5: token id 300 at position 12345",
               "is >= vocab_size 257");
}

}  // namespace
}  // namespace wiola
