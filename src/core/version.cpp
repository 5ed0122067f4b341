#include "core/version.hpp"

#include <ostream>

// Defined for this file by src/CMakeLists.txt.
#ifndef WIOLA_CODE_VERSION
#define WIOLA_CODE_VERSION "wiola (version unknown)"
#endif

namespace wiola {

std::string code_version() { return WIOLA_CODE_VERSION; }

void print_version(std::ostream& out, std::string_view tool) {
  out << tool << ": " << code_version() << "\n";
}

}  // namespace wiola
