#pragma once
// The device backends this build has (backend_registry.hpp). The tools call
// register_device_backends() once at start. In a build with CUDA it registers
// "cuda" as the CUDA plugin (cuda_plugin.hpp), loaded at the first question
// about a CUDA device; in a build without CUDA it registers nothing.
#include <string>
#include <vector>

namespace wiola {

void register_device_backends();

// Where the CUDA plugin is looked for, in order: $WIOLA_CUDA_PLUGIN (a file;
// when set, the only place), beside the program, the program's ../lib/wiola
// and ../lib (an installed or bundled layout), and this build's own output.
std::vector<std::string> cuda_plugin_candidates();

}  // namespace wiola
