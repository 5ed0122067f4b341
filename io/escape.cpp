#include "io/escape.hpp"

#include "io/utf8.hpp"

namespace wiola {

std::string escape_text(std::string_view bytes, bool visible_space) {
  static const char hex[] = "0123456789abcdef";
  std::string s;
  std::size_t i = 0;
  while (i < bytes.size()) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x80) {
      std::size_t j = i;
      const char32_t cp = next_code_point(bytes, j);
      const bool ill_formed = j == i + 1;
      if (!ill_formed && cp >= 0xA0) {  // a printable non-ASCII character, as UTF-8
        s.append(bytes.substr(i, j - i));
        i = j;
        continue;
      }
    }
    if (c == '\n') s += "\\n";
    else if (c == '\t') s += "\\t";
    else if (c == '\\') s += "\\\\";
    else if (c == ' ' && visible_space) s += "\xE2\x90\xA3";  // U+2423 OPEN BOX
    else if (c < 0x20 || c >= 0x7F) {
      s += "\\x";
      s += hex[c >> 4];
      s += hex[c & 0xF];
    } else {
      s += static_cast<char>(c);
    }
    ++i;
  }
  return s;
}

}  // namespace wiola
