// The held-out split by document: training and validation windows never share
// a document, together they cover every document, and the split is a pure
// function of file name, document index and split seed.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "io/heldout_split.hpp"
#include "io/token_dataset.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

constexpr int kVocab = 1 << 20;
constexpr int kLen = 10;  // tokens per document, eod included

DatasetSpec split_spec(const std::vector<std::string>& files, DataSplit side, double fraction) {
  DatasetSpec s = DatasetSpec::from_files(files);
  s.split = side;
  s.heldout = {fraction, 0};
  return s;
}

// Documents (by file position / kLen) that the windows of `d` read.
std::set<std::pair<std::size_t, std::int64_t>> docs_read(const TokenDataset& d) {
  std::set<std::pair<std::size_t, std::int64_t>> out;
  std::vector<std::int32_t> win(static_cast<std::size_t>(d.seq_len()) + 1);
  for (std::int64_t w = 0; w < d.num_windows(); ++w) {
    const auto loc = d.locate(w);
    d.read_window(w, win.data());
    std::size_t k = 0;
    for (const auto& run : loc.runs)
      for (std::int64_t p = run.start; p < run.start + run.length; ++p, ++k) {
        // Every id tells its position: doc * kLen + i, or eod at the end.
        if (p % kLen != kLen - 1) EXPECT_EQ(win[k], p) << "window " << w;
        else EXPECT_EQ(win[k], kVocab - 1);
        out.insert({loc.file, p / kLen});
      }
  }
  return out;
}

TEST(HeldOut, TrainingAndValidationWindowsAreDisjointByDocument) {
  test::TempDir dir;
  const test::FakeTokenizer tok(kVocab, kVocab - 1);
  const std::string a = test::numbered_docs(dir.file("a.h5"), tok, 400, kLen);
  const std::string b = test::numbered_docs(dir.file("b.h5"), tok, 300, kLen);
  const double f = 0.2;
  const TokenDataset train(split_spec({a, b}, DataSplit::Train, f), 7);
  const TokenDataset val(split_spec({a, b}, DataSplit::HeldOut, f), 7);
  EXPECT_EQ(train.split(), DataSplit::Train);

  // Which documents each side may hold, from the rule itself.
  std::int64_t held = 0;
  for (std::size_t fi = 0; fi < 2; ++fi) {
    const std::uint64_t key = heldout_file_key(fi == 0 ? a : b);
    for (std::int64_t doc = 0; doc < (fi == 0 ? 400 : 300); ++doc) held += is_heldout_document(key, doc, {f, 0});
  }
  EXPECT_GT(held, 100);  // about 20 % of 700
  EXPECT_LT(held, 180);
  EXPECT_EQ(val.num_tokens(), held * kLen);
  EXPECT_EQ(train.num_tokens() + val.num_tokens(), 700 * kLen);

  const auto train_docs = docs_read(train), val_docs = docs_read(val);
  for (const auto& [file, doc] : train_docs)
    EXPECT_FALSE(is_heldout_document(heldout_file_key(train.file_path(file)), doc, {f, 0}));
  for (const auto& [file, doc] : val_docs)
    EXPECT_TRUE(is_heldout_document(heldout_file_key(val.file_path(file)), doc, {f, 0}));
  // Windows span documents of their side: far fewer windows than documents.
  EXPECT_GT(train_docs.size(), 500u);
  EXPECT_GT(val_docs.size(), 100u);
}

TEST(HeldOut, DependsOnTheFileNameNotItsFolderNorTheTrainingSeed) {
  test::TempDir one, two;
  const test::FakeTokenizer tok(kVocab, kVocab - 1);
  const std::string a = test::numbered_docs(one.file("part.h5"), tok, 200, kLen);
  const std::string b = test::numbered_docs(two.file("part.h5"), tok, 200, kLen);
  const std::string c = test::numbered_docs(two.file("other.h5"), tok, 200, kLen);
  const auto held = [](const std::string& path, std::uint64_t seed) {
    std::vector<bool> v;
    for (int d = 0; d < 200; ++d) v.push_back(is_heldout_document(heldout_file_key(path), d, {0.1, seed}));
    return v;
  };
  EXPECT_EQ(held(a, 0), held(b, 0));
  EXPECT_NE(held(a, 0), held(c, 0));
  EXPECT_NE(held(a, 0), held(a, 1));
  const TokenDataset va(split_spec({a}, DataSplit::HeldOut, 0.1), 4), vb(split_spec({b}, DataSplit::HeldOut, 0.1), 4);
  EXPECT_EQ(va.num_windows(), vb.num_windows());
  EXPECT_ERROR(is_heldout_document(1, 2, {1.0, 0}), "must be in (0, 1)");
}

TEST(HeldOut, TooFewHeldOutTokensIsAClearError) {
  test::TempDir dir;
  const test::FakeTokenizer tok(kVocab, kVocab - 1);
  const std::string a = test::numbered_docs(dir.file("a.h5"), tok, 50, kLen);
  EXPECT_ERROR(TokenDataset(split_spec({a}, DataSplit::HeldOut, 0.001), 64), "held-out documents",
               "no window of T+1 = 65", "raise the fraction");
  EXPECT_ERROR(TokenDataset(split_spec({a}, DataSplit::Train, 0.5), 400), "a.h5: has",
               "in its training documents, fewer than one window of T+1 = 401");
  EXPECT_ERROR(TokenDataset(split_spec({a}, DataSplit::Train, 0), 4), "held-out fraction 0");
}

TEST(HeldOut, DamagedOffsetsAreReported) {
  test::TempDir dir;
  const std::string path = dir.file("bad.h5");
  {
    h5::File f = h5::File::create(path);
    const std::vector<std::uint16_t> tokens(20, 1);
    f.write<std::uint16_t>("tokens", {20}, tokens);
    f.write<std::uint64_t>("doc_offsets", {3}, std::vector<std::uint64_t>{0, 12, 5});
    f.write_attr_string("format", "wiola-tokens");
    f.write_attr_int("format_version", 1);
    f.write_attr_int("vocab_size", 257);
    f.write_attr_string("tokenizer", "byte");
    f.write_attr_string("tokenizer_hash", "x");
    f.write_attr_int("eod_id", 256);
    f.write_attr_int("n_tokens", 20);
    f.write_attr_int("n_documents", 3);
  }
  EXPECT_ERROR(TokenDataset(split_spec({path}, DataSplit::Train, 0.5), 2), "bad.h5: doc_offsets[2] = 5",
               "not increasing");
}

}  // namespace
}  // namespace wiola
