#include "io/pretokenizer.hpp"

#include <unicode/uchar.h>

#include <array>

#include "io/utf8.hpp"

namespace wiola {

namespace {

enum class CharClass : unsigned char { Letter, Digit, Space, Other };

CharClass classify_slow(char32_t c) {
  const UChar32 u = static_cast<UChar32>(c);
  if (u_isUWhiteSpace(u)) return CharClass::Space;
  const std::uint32_t mask = U_GET_GC_MASK(u);
  if (mask & (U_GC_L_MASK | U_GC_M_MASK)) return CharClass::Letter;
  if (mask & U_GC_N_MASK) return CharClass::Digit;
  return CharClass::Other;
}

const std::array<CharClass, 128>& ascii_classes() {
  static const std::array<CharClass, 128> table = [] {
    std::array<CharClass, 128> t{};
    for (char32_t c = 0; c < 128; ++c) t[c] = classify_slow(c);
    return t;
  }();
  return table;
}

// The class of the character at text[i]; `len` receives its byte length.
CharClass class_at(std::string_view text, std::size_t i, std::size_t& len) {
  const unsigned char b = static_cast<unsigned char>(text[i]);
  if (b < 0x80) {
    len = 1;
    return ascii_classes()[b];
  }
  std::size_t j = i;
  const char32_t c = next_code_point(text, j);
  len = j - i;
  if (c >= 0xDC80 && c <= 0xDCFF && len == 1) return CharClass::Other;  // ill-formed byte
  return classify_slow(c);
}

}  // namespace

void pretokenize(std::string_view text, std::vector<std::string_view>& pieces) {
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const std::size_t start = i;
    std::size_t len = 0;
    CharClass cls = class_at(text, i, len);
    if (cls == CharClass::Space) {
      std::size_t next_len = 0;
      if (text[i] == ' ' && i + 1 < n && class_at(text, i + 1, next_len) != CharClass::Space) {
        // A single space opens the following word.
        i += 1;
        cls = class_at(text, i, len);
      } else {
        std::size_t j = i;
        while (j < n && class_at(text, j, len) == CharClass::Space && j + len - start <= kMaxPieceBytes)
          j += len;
        if (j < n && j - start >= 2 && text[j - 1] == ' ' &&
            class_at(text, j, next_len) != CharClass::Space)
          --j;  // the last space goes to the next word
        pieces.push_back(text.substr(start, j - start));
        i = j;
        continue;
      }
    }
    int count = 0;
    std::size_t j = i;
    while (j < n) {
      std::size_t l = 0;
      if (class_at(text, j, l) != cls) break;
      if (cls == CharClass::Digit && count == 3) break;
      if (j + l - start > kMaxPieceBytes && j > i) break;
      j += l;
      ++count;
    }
    pieces.push_back(text.substr(start, j - start));
    i = j;
  }
}

}  // namespace wiola
