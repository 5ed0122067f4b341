#pragma once
// Pre-tokenisation for the BPE tokenizer ("wiola-words-1", docs/data-format.md):
// text is cut into pieces and BPE merges never cross a piece boundary.
//
// Characters fall in four classes: letters (Unicode L* and combining marks M*),
// digits (N*), white space (Unicode White_Space) and other. A piece is
//   - an optional single leading space U+0020 followed by a run of letters, a
//     run of at most 3 digits, or a run of other characters; or
//   - a run of white space, which leaves its last character to the next piece
//     when that is a space followed by a non-space (so " the" keeps its space).
// No piece is longer than kMaxPieceBytes (a longer run is cut at a character
// boundary). The pieces concatenate to the text.
#include <cstddef>
#include <string_view>
#include <vector>

namespace wiola {

inline constexpr std::size_t kMaxPieceBytes = 64;
inline constexpr const char* kPretokenizerName = "wiola-words-1";

// Appends the pieces of `text` (valid UTF-8) to `pieces` as views into it.
void pretokenize(std::string_view text, std::vector<std::string_view>& pieces);

}  // namespace wiola
