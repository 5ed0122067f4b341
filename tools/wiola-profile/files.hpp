#pragma once
// Reading and writing wiola-profile's files. Errors name the path.
#include <nlohmann/json.hpp>
#include <string>

namespace wiola::profile {

// The documents the tool writes and reads: objects keep their keys in the
// order they were written.
using Json = nlohmann::ordered_json;

std::string read_text_file(const std::string& path);
void write_text_file(const std::string& path, const std::string& text);
// Parses the file as JSON; malformed text is refused naming the path, line and column.
Json read_json_file(const std::string& path);

}  // namespace wiola::profile
