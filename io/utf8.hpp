#pragma once
// UTF-8 checks for text input. Valid means well-formed per Unicode: no
// overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace wiola {

// Byte offset of the first byte of the first ill-formed sequence, or npos.
std::size_t find_invalid_utf8(std::string_view text);

// The 1-based line of byte `offset` (for error messages).
std::int64_t line_of_offset(std::string_view text, std::size_t offset);

// Decodes the code point at text[i] and advances i past it. Ill-formed bytes
// decode as themselves (one byte, value 0xDC00 + byte) so callers never stall.
char32_t next_code_point(std::string_view text, std::size_t& i);

// True when every byte is < 0x80.
bool is_ascii(std::string_view text);

}  // namespace wiola
