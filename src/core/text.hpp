#pragma once
// Small text helpers every layer uses: comma-separated lists, durations as a
// clock shows them, and whole text files read with an error naming the path.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wiola {

// The items of a comma-separated list, each trimmed of surrounding spaces and
// tabs. Empty items are kept ("7,,7" has three items, "" has one) so that a
// caller can refuse them by position or skip them, as it needs.
std::vector<std::string> split_list(std::string_view text);

// Seconds rounded to a whole second as "m:ss", or "h:mm:ss" from an hour on.
std::string duration_text(double seconds);

// The whole file. Throws wiola::Error "<path>: cannot read <what> (<reason>)".
std::string read_text_file(const std::string& path, std::string_view what = "the file");
// The same, or nullopt when the file cannot be read (the caller words the error).
std::optional<std::string> try_read_text_file(const std::string& path);

}  // namespace wiola
