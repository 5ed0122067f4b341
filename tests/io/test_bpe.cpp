// The byte-level BPE tokenizer: a hand-checked vocabulary, training on tiny
// corpora with hand-computed merges, the file format and its hash.
#include <gtest/gtest.h>

#include <random>

#include "io/bpe_tokenizer.hpp"
#include "io/bpe_trainer.hpp"
#include "io/byte_tokenizer.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

using Ids = std::vector<std::int32_t>;

// 260 = "ab", 261 = "abc", 262 = " ab", 263 = "bc".
BpeTokenizer hand_vocab() { return BpeTokenizer({{97, 98}, {260, 99}, {32, 260}, {98, 99}}); }

TEST(Bpe, HandCheckedVocabulary) {
  const BpeTokenizer t = hand_vocab();
  EXPECT_EQ(t.name(), "bpe");
  EXPECT_EQ(t.vocab_size(), 264);
  EXPECT_EQ(t.eod_id(), 256);
  EXPECT_EQ(t.token_bytes(261), "abc");
  EXPECT_EQ(t.token_bytes(262), " ab");
  EXPECT_EQ(t.token_bytes(257), "<|user|>");
  EXPECT_EQ(t.encode("abc"), (Ids{261}));
  // (a,b) has the lowest index, so "bc" only forms where no "ab" took the b.
  EXPECT_EQ(t.encode("bcab"), (Ids{263, 260}));
  // In " abc", merge 1 (ab+c) comes before merge 2 (space+ab).
  EXPECT_EQ(t.encode("x abc"), (Ids{120, 32, 261}));
  EXPECT_EQ(t.encode("x ab"), (Ids{120, 262}));
  EXPECT_EQ(t.encode("aab"), (Ids{97, 260}));
  EXPECT_EQ(t.encode(""), Ids{});
  // Merges never cross pieces: "ab" then " ab" then "c" is not "abc".
  EXPECT_EQ(t.encode("ab abc"), (Ids{260, 32, 261}));
  // Byte fallback: anything outside the merges is its bytes.
  EXPECT_EQ(t.encode("\xE2\x82\xAC"), (Ids{0xE2, 0x82, 0xAC}));
}

TEST(Bpe, DecodesAndRoundTrips) {
  const BpeTokenizer t = hand_vocab();
  EXPECT_EQ(t.decode(Ids{120, 32, 261, 256}), "x abc<|endoftext|>");
  EXPECT_EQ(t.decode(Ids{258, 259}), "<|assistant|><|end|>");
  EXPECT_ERROR(t.decode(Ids{264}), "id 264 at position 0");
  EXPECT_ERROR(t.decode(Ids{1, -1}), "id -1 at position 1");
  std::mt19937 rng(3);
  const std::vector<std::string> alphabet = {"a", "b", "c", " ", "\n", "\xC3\xA9", "1", "!"};
  for (int round = 0; round < 100; ++round) {
    std::string text;
    for (int i = 0; i < 50; ++i) text += alphabet[rng() % alphabet.size()];
    ASSERT_EQ(t.decode(t.encode(text)), text);
  }
}

TEST(Bpe, NormalisesToNfcAndNeverEmitsSpecials) {
  const BpeTokenizer t = hand_vocab();
  EXPECT_EQ(t.encode("e\xCC\x81"), (Ids{0xC3, 0xA9}));  // decomposed é is stored composed
  EXPECT_EQ(t.decode(t.encode("cafe\xCC\x81")), "caf\xC3\xA9");
  for (auto id : t.encode("<|endoftext|><|user|><|assistant|><|end|>")) EXPECT_LT(id, 256);
  EXPECT_EQ(BpeTokenizer::special_id("<|assistant|>"), 258);
  EXPECT_EQ(BpeTokenizer::special_id("<|nope|>"), -1);
  EXPECT_ERROR(t.encode("ok\nbad \xFF here"), "not valid UTF-8", "byte 7", "line 2");
}

TEST(Bpe, RejectsBadMerges) {
  EXPECT_ERROR(BpeTokenizer({{97, 260}}), "merge 0", "earlier");   // refers to itself
  EXPECT_ERROR(BpeTokenizer({{256, 97}}), "merge 0", "256..259");  // a special token
  EXPECT_ERROR(BpeTokenizer({{97, 98}, {97, 98}}), "merge 1", "repeats");
}

TEST(BpeTrainer, HandComputedMerges) {
  PieceCounts c;
  c.add_piece("abab", 3);
  c.add_piece("abc", 2);
  // Pair counts: (a,b) 3*2 + 2 = 8, (b,a) 3, (b,c) 2. After a+b: (ab,ab) 3,
  // (ab,c) 2; (b,a) and (b,c) are gone.
  BpeTrainOptions o;
  o.vocab_size = 300;
  const BpeTokenizer t = train_bpe(c, o);
  EXPECT_EQ(t.merges(), (std::vector<BpeMerge>{{97, 98}, {260, 260}, {260, 99}}));
  EXPECT_EQ(t.vocab_size(), 263);  // stopped: nothing left to merge
  EXPECT_EQ(t.encode("abab"), (Ids{261}));
  EXPECT_EQ(t.encode("abc"), (Ids{262}));
}

TEST(BpeTrainer, TiesGoToTheSmallerPairAndMinFrequencyStops) {
  PieceCounts c;
  c.add_piece("xy", 2);
  c.add_piece("ab", 2);
  c.add_piece("qr", 1);
  BpeTrainOptions o;
  o.vocab_size = 270;
  const BpeTokenizer t = train_bpe(c, o);
  EXPECT_EQ(t.merges(), (std::vector<BpeMerge>{{97, 98}, {120, 121}}));  // "qr" is too rare
  o.min_frequency = 1;
  o.vocab_size = 261;
  EXPECT_EQ(train_bpe(c, o).merges(), (std::vector<BpeMerge>{{97, 98}}));  // the vocabulary is full
  o.vocab_size = 100;
  EXPECT_ERROR(train_bpe(c, o), "vocabulary size 100 is below 260");
}

TEST(BpeTrainer, CountsPiecesOfNormalisedText) {
  PieceCounts c;
  c.add_document("the cat, the hat");
  c.add_document("cafe\xCC\x81");
  EXPECT_EQ(c.counts().at(" the"), 1);
  EXPECT_EQ(c.counts().at("the"), 1);
  EXPECT_EQ(c.counts().at("caf\xC3\xA9"), 1);
  EXPECT_EQ(c.total(), 6);
  PieceCounts d;
  d.add_document("the end");
  c.merge_from(std::move(d));
  EXPECT_EQ(c.counts().at("the"), 2);
}

TEST(BpeTrainer, EncodingReproducesTrainingOnRealText) {
  PieceCounts c;
  const std::string text =
      "It is a truth universally acknowledged, that a single man in possession of a good "
      "fortune, must be in want of a wife. However little known the feelings or views of such "
      "a man may be on his first entering a neighbourhood, this truth is so well fixed in the "
      "minds of the surrounding families, that he is considered the rightful property of some "
      "one or other of their daughters.";
  for (int i = 0; i < 3; ++i) c.add_document(text);
  BpeTrainOptions o;
  o.vocab_size = 400;
  const BpeTokenizer t = train_bpe(c, o);
  EXPECT_GT(t.merges().size(), 50u);
  const Ids ids = t.encode(text);
  EXPECT_LT(ids.size(), text.size() / 2);  // it compresses its own training text
  EXPECT_EQ(t.decode(ids), text);
  // Deterministic: the same counts give the same tokenizer.
  EXPECT_EQ(train_bpe(c, o).hash(), t.hash());
}

TEST(BpeFile, SaveAndLoadKeepTheVocabularyAndHash) {
  test::TempDir dir;
  const BpeTokenizer t = hand_vocab();
  const std::string path = dir.file("tok.bpe");
  t.save(path);
  const auto loaded = load_tokenizer_file(path);
  EXPECT_EQ(loaded->hash(), t.hash());
  EXPECT_EQ(loaded->vocab_size(), 264);
  EXPECT_EQ(loaded->encode("x abc"), (Ids{120, 32, 261}));
  EXPECT_EQ(loaded->model_text(), t.serialize());
  EXPECT_EQ(t.hash().size(), 16u);
  EXPECT_NE(t.hash(), BpeTokenizer({{97, 98}}).hash());
  EXPECT_NE(t.hash(), ByteTokenizer().hash());
  // Comments and spacing do not change the hash.
  std::string text = t.serialize();
  text.insert(0, "# a comment\n\n");
  EXPECT_EQ(BpeTokenizer::parse(text, "x").hash(), t.hash());
}

TEST(BpeFile, DamagedFilesAreErrorsNamingTheLine) {
  const std::string good = hand_vocab().serialize();
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_ERROR(BpeTokenizer::parse("hello\n", "t.bpe"), "t.bpe", "not a wiola BPE tokenizer");
  EXPECT_ERROR(BpeTokenizer::parse("", "t.bpe"), "t.bpe: empty file");
  EXPECT_ERROR(BpeTokenizer::parse(replaced("98 99", "99 98"), "t.bpe"), "t.bpe", "does not match",
               "edited or damaged");
  EXPECT_ERROR(BpeTokenizer::parse(good.substr(0, good.find("32 260")), "t.bpe"),
               "t.bpe: ends after 2 of 4 merges");
  EXPECT_ERROR(BpeTokenizer::parse(replaced("vocab_size 264", "vocab_size 300"), "t.bpe"),
               "t.bpe:", "vocab_size 300 is not 260 + merges = 264");
  EXPECT_ERROR(BpeTokenizer::parse(replaced("normalization nfc", "normalization nfkc"), "t.bpe"),
               "t.bpe:3:", "nfkc");
  EXPECT_ERROR(BpeTokenizer::parse(replaced("260 99", "260 x9"), "t.bpe"), "t.bpe:", "'x9'");
  EXPECT_ERROR(BpeTokenizer::parse(replaced("260 99", "265 99"), "t.bpe"), "merge 1", "earlier");
  EXPECT_ERROR(load_tokenizer_file("/no/such/tok.bpe"), "/no/such/tok.bpe: cannot read");
}

}  // namespace
}  // namespace wiola
