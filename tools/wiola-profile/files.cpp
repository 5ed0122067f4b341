#include "wiola-profile/files.hpp"

#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace wiola::profile {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), "cannot read '", path, "'");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  require(out.good(), "cannot write '", path, "'");
  out << text;
  out.flush();
  require(out.good(), "error while writing '", path, "'");
}

Json read_json_file(const std::string& path) {
  const std::string text = read_text_file(path);
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    fail(path, ": ", e.what());
  }
}

}  // namespace wiola::profile
