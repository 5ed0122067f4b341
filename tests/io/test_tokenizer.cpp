#include <gtest/gtest.h>

#include "io/byte_tokenizer.hpp"
#include "io_test_util.hpp"

namespace wiola {
namespace {

TEST(ByteTokenizer, Basics) {
  const ByteTokenizer t;
  EXPECT_EQ(t.name(), "byte");
  EXPECT_EQ(t.vocab_size(), 257);
  EXPECT_EQ(t.eod_id(), 256);
  EXPECT_EQ(t.hash().size(), 16u);
  EXPECT_EQ(t.hash(), ByteTokenizer().hash());
  EXPECT_EQ(t.hash().find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(ByteTokenizer, RoundTripsEveryByte) {
  const ByteTokenizer t;
  std::string text;
  for (int b = 0; b < 256; ++b) text.push_back(static_cast<char>(b));
  text += "Grüße, %\n";
  const auto ids = t.encode(text);
  ASSERT_EQ(ids.size(), text.size());
  for (std::size_t i = 0; i < 256; ++i) EXPECT_EQ(ids[i], static_cast<std::int32_t>(i));
  EXPECT_EQ(t.decode(ids), text);
}

TEST(ByteTokenizer, EndOfText) {
  const ByteTokenizer t;
  const std::vector<std::int32_t> ids = {'h', 'i', 256};
  EXPECT_EQ(t.decode(ids), "hi<|endoftext|>");
  // Special-token text in the input is plain bytes.
  for (auto id : t.encode("<|endoftext|>")) EXPECT_LT(id, 256);
  const std::vector<std::int32_t> bad = {'a', 257};
  EXPECT_ERROR(t.decode(bad), "id 257 at position 1");
  const std::vector<std::int32_t> neg = {-1};
  EXPECT_ERROR(t.decode(neg), "id -1");
}

TEST(Tokenizer, Factory) {
  const auto t = make_tokenizer("byte");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->hash(), ByteTokenizer().hash());
  EXPECT_ERROR(make_tokenizer("bpe-32k"), "tokenizer 'bpe-32k' is unknown", "byte");
  EXPECT_EQ(hex64(0xABCull), "0000000000000abc");
}

}  // namespace
}  // namespace wiola
