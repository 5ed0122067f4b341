#include "io/tokenizer.hpp"

#include "core/error.hpp"
#include "io/byte_tokenizer.hpp"

namespace wiola {

std::unique_ptr<Tokenizer> make_tokenizer(std::string_view name) {
  if (name == ByteTokenizer::kName) return std::make_unique<ByteTokenizer>();
  fail("tokenizer '", name, "' is unknown (known: ", ByteTokenizer::kName, ")");
}

std::string hex64(std::uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 0xF];
  return s;
}

}  // namespace wiola
