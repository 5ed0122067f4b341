#pragma once
// The version of this build: "wiola 0.1.0 (f5aa35c)" — the project version
// and, in a git checkout, the commit it was configured at. Checkpoints record
// it and every tool prints it for --version.
#include <iosfwd>
#include <string>
#include <string_view>

namespace wiola {

std::string code_version();

// "<tool>: <code_version()>\n" on `out`: what `--version` prints.
void print_version(std::ostream& out, std::string_view tool);

}  // namespace wiola
