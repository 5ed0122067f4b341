#pragma once
// Documents from Debian's `fortunes` package: the text files of a directory
// (regular files only; *.dat and *.u8 index files and symlinks are skipped), in
// sorted file-name order. Within a file, lines holding exactly "%" separate
// documents; a document loses its final newline, and documents that are empty
// or only whitespace are dropped.
#include <string>
#include <string_view>
#include <vector>

namespace wiola {

inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

std::vector<std::string> read_fortune_documents(const std::string& dir);

// The embedded dataset's validation split: a document is held out when
// splitmix64(FNV-1a(text)) % val_every == 0. Keyed by the text, not its index,
// so a package update that adds fortunes does not reshuffle the split, and
// duplicate fortunes always land on the same side.
bool is_validation_document(std::string_view text, int val_every);

// Splits one fortune file's text into documents (the rules above).
std::vector<std::string> split_fortunes(const std::string& text);

}  // namespace wiola
