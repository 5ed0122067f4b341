#include <gtest/gtest.h>

#include <filesystem>

#include "io/byte_tokenizer.hpp"
#include "io/h5.hpp"
#include "io/token_file.hpp"
#include "io/fortunes.hpp"
#include "io/token_dataset.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

namespace fs = std::filesystem;

TEST(Fortunes, SplitsOnPercentLines) {
  const auto docs = split_fortunes("one\n%\ntwo\nlines\n%\n%\n   \n%\n50% off\n%%\nthree");
  EXPECT_EQ(docs, (std::vector<std::string>{"one", "two\nlines", "50% off\n%%\nthree"}));
  EXPECT_EQ(split_fortunes("a\n\n%\n"), std::vector<std::string>{"a\n"});
  EXPECT_TRUE(split_fortunes("%\n%\n").empty());
}

TEST(Fortunes, ReadsADirectory) {
  test::TempDir dir;
  test::write_text(dir.file("b"), "bee one\n%\nbee two\n");
  test::write_text(dir.file("a"), "ay one\n%\nay two\n  indented\n%\n");
  test::write_text(dir.file("a.dat"), "binary\n%\nindex\n");
  test::write_text(dir.file("a.u8"), "encoded\n%\n");
  fs::create_symlink(dir.file("a"), dir.file("link"));
  fs::create_directory(dir.file("off"));
  test::write_text(dir.file("off/offensive"), "skipped\n");
  const auto docs = read_fortune_documents(dir.path().string());
  EXPECT_EQ(docs, (std::vector<std::string>{"ay one", "ay two\n  indented", "bee one", "bee two"}));
}

TEST(Fortunes, Errors) {
  test::TempDir dir;
  EXPECT_ERROR(read_fortune_documents(dir.file("nothing")), "nothing: no such directory",
               "install the 'fortunes' package (tools/install-deps.sh)");
  test::write_text(dir.file("x.dat"), "ignored\n%\n");
  EXPECT_ERROR(read_fortune_documents(dir.path().string()), "no fortune documents",
               "tools/install-deps.sh");
}

TEST(Fortunes, ValidationSplitIsDeterministic) {
  int held = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string doc = "fortune number " + std::to_string(i);
    const bool v = is_validation_document(doc, 20);
    EXPECT_EQ(v, is_validation_document(doc, 20));
    held += v;
  }
  EXPECT_GT(held, 800);
  EXPECT_LT(held, 1200);
  EXPECT_ERROR(is_validation_document("x", 1), "--val-every");
}

// The embedded dataset built by `all` (cmake/WiolaEmbeddedData.cmake): BPE
// tokens, the tokenizer trained on the training documents and embedded.
TEST(Fortunes, EmbeddedDataset) {
  if (!fs::exists(WIOLA_EMBEDDED_TRAIN) || !fs::exists(WIOLA_EMBEDDED_VAL))
    GTEST_SKIP() << "embedded dataset not built";
  const TokenDataset train({WIOLA_EMBEDDED_TRAIN}, 128), val({WIOLA_EMBEDDED_VAL}, 128);
  if (train.tokenizer() == "byte") GTEST_SKIP() << "built with the byte tokenizer";
  EXPECT_EQ(train.tokenizer(), "bpe");
  EXPECT_EQ(train.eod_id(), 256);
  EXPECT_GE(train.vocab_size(), 1024);
  EXPECT_LE(train.vocab_size(), 4096);
  EXPECT_EQ(val.tokenizer_hash(), train.tokenizer_hash());
  EXPECT_GT(train.num_tokens(), 10 * val.num_tokens());
  EXPECT_GT(val.num_windows(), 100);
  const h5::File tf = h5::File::open_read(WIOLA_EMBEDDED_TRAIN);
  const auto tok = tokenizer_for(tf, read_token_header(tf));
  std::vector<std::int32_t> win(129);
  for (std::int64_t w : {std::int64_t{0}, train.num_windows() - 1}) {
    train.read_window(w, win.data());
    for (auto id : win) EXPECT_TRUE(id >= 0 && id < train.vocab_size());
  }
  if (!fs::is_directory(kFortunesDir)) return;
  // Every fortune round-trips, on its side of the split, in order.
  const auto docs = read_fortune_documents(kFortunesDir);
  std::vector<std::string> want[2];
  for (const auto& d : docs) want[is_validation_document(d, 20) ? 1 : 0].push_back(d);
  int side = 0;
  for (const char* path : {WIOLA_EMBEDDED_TRAIN, WIOLA_EMBEDDED_VAL}) {
    const h5::File f = h5::File::open_read(path);
    const auto ids = f.read<std::int32_t>("tokens");
    auto offsets = f.read<std::uint64_t>("doc_offsets");
    offsets.push_back(ids.size());
    ASSERT_EQ(offsets.size() - 1, want[side].size());
    for (std::size_t d = 0; d + 1 < offsets.size(); ++d) {
      const std::span<const std::int32_t> doc(ids.data() + offsets[d], offsets[d + 1] - offsets[d] - 1);
      ASSERT_EQ(tok->decode(doc), want[side][d]) << path << " document " << d;
    }
    ++side;
  }
}

}  // namespace
}  // namespace wiola
