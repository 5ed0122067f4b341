// UTF-8 checks, NFC and the pre-tokeniser.
#include <gtest/gtest.h>

#include <random>

#include "io/escape.hpp"
#include "io/nfc.hpp"
#include "io/pretokenizer.hpp"
#include "io/utf8.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

constexpr auto npos = std::string_view::npos;

TEST(Utf8, FindsTheFirstIllFormedByte) {
  EXPECT_EQ(find_invalid_utf8(""), npos);
  EXPECT_EQ(find_invalid_utf8("plain ascii text, long enough for the fast path"), npos);
  EXPECT_EQ(find_invalid_utf8("Gr\xC3\xBC\xC3\x9F" "e \xE2\x82\xAC \xF0\x9F\x98\x80"), npos);
  EXPECT_EQ(find_invalid_utf8("abc\xFF"), 3u);                       // never valid
  EXPECT_EQ(find_invalid_utf8("ab\xC3"), 2u);                        // truncated
  EXPECT_EQ(find_invalid_utf8("\xC0\xAF"), 0u);                      // overlong '/'
  EXPECT_EQ(find_invalid_utf8("x\xE0\x80\xAF"), 1u);                 // overlong
  EXPECT_EQ(find_invalid_utf8("12345678\xED\xA0\x80"), 8u);          // surrogate U+D800
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);              // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("caf\xE9"), 3u);                       // Latin-1 e-acute
  EXPECT_EQ(line_of_offset("a\nb\nc", 4), 3);
}

TEST(Utf8, DecodesCodePoints) {
  const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  std::size_t i = 0;
  EXPECT_EQ(next_code_point(s, i), U'a');
  EXPECT_EQ(next_code_point(s, i), U'\u00E9');
  EXPECT_EQ(next_code_point(s, i), U'\u20AC');
  EXPECT_EQ(next_code_point(s, i), U'\U0001F600');
  EXPECT_EQ(i, s.size());
}

TEST(Nfc, ComposesAndKeepsNormalText) {
  EXPECT_EQ(to_nfc("plain"), "plain");
  EXPECT_EQ(to_nfc("cafe\xCC\x81"), "caf\xC3\xA9");           // e + combining acute -> é
  EXPECT_EQ(to_nfc("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(to_nfc("\xE2\x84\xAB"), "\xC3\x85");               // Angstrom sign -> Å (canonical)
  EXPECT_EQ(to_nfc("\xEF\xAC\x81"), "\xEF\xAC\x81");           // ligature fi: compatibility only, kept
}

std::vector<std::string> pieces_of(std::string_view text) {
  std::vector<std::string_view> p;
  pretokenize(text, p);
  return {p.begin(), p.end()};
}

using Pieces = std::vector<std::string>;

TEST(Pretokenizer, SplitsWordsDigitsAndOther) {
  EXPECT_EQ(pieces_of("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(pieces_of("Hello  world"), (Pieces{"Hello", " ", " world"}));
  EXPECT_EQ(pieces_of("a\n\nb"), (Pieces{"a", "\n\n", "b"}));
  EXPECT_EQ(pieces_of("x = 12345;"), (Pieces{"x", " =", " 123", "45", ";"}));
  EXPECT_EQ(pieces_of("don't stop..."), (Pieces{"don", "'", "t", " stop", "..."}));
  EXPECT_EQ(pieces_of("Gr\xC3\xBC\xC3\x9F" "e, Welt!"), (Pieces{"Gr\xC3\xBC\xC3\x9F" "e", ",", " Welt", "!"}));
  EXPECT_EQ(pieces_of("cafe\xCC\x81 ok"), (Pieces{"cafe\xCC\x81", " ok"}));  // a mark joins its letter
  EXPECT_EQ(pieces_of("end  "), (Pieces{"end", "  "}));
  EXPECT_EQ(pieces_of(" \n x"), (Pieces{" \n", " x"}));
  EXPECT_EQ(pieces_of("\t-- A"), (Pieces{"\t", "--", " A"}));
  EXPECT_EQ(pieces_of(""), Pieces{});
}

TEST(Pretokenizer, CutsLongRunsAtCharacterBoundaries) {
  const auto p = pieces_of(std::string(100, 'a'));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].size(), kMaxPieceBytes);
  std::string umlauts;
  for (int i = 0; i < 40; ++i) umlauts += "\xC3\xBC";  // 80 bytes of ü
  const auto q = pieces_of(umlauts);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].size(), 64u);
  EXPECT_EQ(q[1].size(), 16u);
}

TEST(Pretokenizer, PiecesConcatenateToTheText) {
  std::mt19937 rng(5);
  const std::vector<std::string> alphabet = {"a", "b", " ", "  ", "\n", "7", ".", "\xC3\xA9",
                                             "\xE2\x82\xAC", "\t", "Z", "\xCC\x81", "!"};
  for (int round = 0; round < 200; ++round) {
    std::string text;
    for (int i = 0; i < 60; ++i) text += alphabet[rng() % alphabet.size()];
    std::string joined;
    for (const auto& p : pieces_of(text)) {
      EXPECT_FALSE(p.empty());
      joined += p;
    }
    ASSERT_EQ(joined, text);
  }
}

TEST(Escape, ShowsTokensOnOneLine) {
  EXPECT_EQ(escape_text("a b\n"), "a b\\n");
  EXPECT_EQ(escape_text(" x", true), "\xE2\x90\xA3x");
  EXPECT_EQ(escape_text("\x01\xFF"), "\\x01\\xff");
  EXPECT_EQ(escape_text("\xC3\xA9"), "\xC3\xA9");
}

}  // namespace
}  // namespace wiola
