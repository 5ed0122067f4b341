#pragma once
// Shows token text in one line: printable ASCII and well-formed UTF-8 as they
// are, a space as "␣" only where asked, everything else as \n, \t, \xNN.
#include <string>
#include <string_view>

namespace wiola {

std::string escape_text(std::string_view bytes, bool visible_space = false);

}  // namespace wiola
