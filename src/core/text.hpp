#pragma once
// Small text helpers every layer uses: comma-separated lists, durations as a
// clock shows them, and whole text files read with an error naming the path.
#include <locale>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wiola {

// The items of a comma-separated list, each trimmed of surrounding spaces and
// tabs. Empty items are kept ("7,,7" has three items, "" has one) so that a
// caller can refuse them by position or skip them, as it needs.
std::vector<std::string> split_list(std::string_view text);

// The shortest decimal text that reads back as exactly `v`: "0.0003" is
// "3e-4" (exponents without padding), 0.05 is "0.05", 10000.0 is "10000".
// What help texts, INI files and manifests show, instead of the 17 digits of
// 0.00029999999999999997.
std::string shortest_real(double v);

// Seconds rounded to a whole second as "m:ss", or "h:mm:ss" from an hour on.
std::string duration_text(double seconds);

// `bytes` safe to quote in a one-line message: well-formed UTF-8 text as it
// is; control characters, DEL and bytes that are not UTF-8 as \xNN (a binary
// file named where a text file belongs is not echoed raw to the terminal).
std::string printable(std::string_view bytes);
// The same line by line, the line breaks kept: what the tools print as an
// error message, whatever file or option text it quotes.
std::string printable_lines(std::string_view text);

// The whole file. Throws wiola::Error "<path>: cannot read <what> (<reason>)".
std::string read_text_file(const std::string& path, std::string_view what = "the file");
// The same, or nullopt when the file cannot be read (the caller words the error).
std::optional<std::string> try_read_text_file(const std::string& path);

// A locale whose streams write every double as shortest_real() does, for
// code that writes numbers with operator<< (INI texts): os.imbue(...).
std::locale shortest_real_locale(const std::locale& base = std::locale::classic());

}  // namespace wiola
