#pragma once
// Unicode NFC (canonical composition) of UTF-8 text, through ICU's
// Normalizer2. Text the BPE tokenizer sees is NFC, so "é" typed as e + U+0301
// and as U+00E9 gives the same tokens.
#include <string>
#include <string_view>

namespace wiola {

// `text` must be valid UTF-8 (see utf8.hpp). ASCII and text that is already
// NFC are returned as they are.
std::string to_nfc(std::string_view text);

}  // namespace wiola
