#include "core/ini.hpp"

#include <boost/program_options/errors.hpp>
#include <boost/program_options/parsers.hpp>
#include <map>
#include <sstream>
#include <string_view>

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/option_errors.hpp"

namespace po = boost::program_options;

namespace wiola {

namespace {

constexpr const char* kBlanks = " \t\r";

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(kBlanks);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kBlanks) - b + 1);
}

// Where a comment starts in a value, or npos.
std::size_t inline_comment(std::string_view value) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '#') return i;
    if (value[i] == ';' && (i == 0 || value[i - 1] == ' ' || value[i - 1] == '\t')) return i;
  }
  return std::string_view::npos;
}

}  // namespace

void store_ini(const std::string& text, const std::string& origin,
               const po::options_description& desc, po::variables_map& vm) {
  // Checked line by line here, so errors can name the line; what Boost reads
  // is the text with the comment lines blanked (it knows no ';' comments).
  // Anything quoted from the file goes through printable(): a binary file
  // given as a config is named, not echoed to the terminal.
  if (const std::size_t nul = text.find('\0'); nul != std::string::npos)
    fail(origin, ": not a text file (a NUL byte at offset ", nul, "; it starts '",
         printable(std::string_view(text).substr(0, 16)), "')");
  std::istringstream in(text);
  std::ostringstream clean;
  std::map<std::string, int> line_of;  // key -> its last line
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    const std::string_view t = trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') {
      clean << '\n';
      continue;
    }
    require(t[0] != '[', origin, ":", no, ": section headers ('", printable(t),
            "') are not supported: a config file is flat 'option = value' lines");
    const auto eq = t.find('=');
    require(eq != std::string_view::npos, origin, ":", no, ": expected 'option = value', found '",
            printable(t), "'");
    const std::string key(trim(t.substr(0, eq)));
    const std::string_view value = trim(t.substr(eq + 1));
    require(!key.empty(), origin, ":", no, ": no option name before '='");
    if (const std::size_t c = inline_comment(value); c != std::string_view::npos)
      fail(origin, ":", no, ": option '", printable(key), "': '", printable(value.substr(c)),
           "' after the value looks like a comment; comments go on lines of their own");
    require(desc.find_nothrow(key, false) != nullptr, origin, ":", no, ": unrecognised option '",
            printable(key), "'");
    line_of[key] = no;
    clean << key << " = " << value << '\n';
  }

  std::istringstream cleaned(clean.str());
  try {
    po::store(po::parse_config_file(cleaned, desc), vm);
  } catch (const po::error_with_option_name& e) {
    std::string name = e.get_option_name();
    name.erase(0, name.find_first_not_of('-'));
    const auto it = line_of.find(name);
    if (it != line_of.end()) fail(origin, ":", it->second, ": ", printable(error_text(e)));
    fail(origin, ": ", printable(error_text(e)));
  } catch (const po::error& e) {
    fail(origin, ": ", printable(error_text(e)));
  }
}

}  // namespace wiola
