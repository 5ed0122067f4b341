#pragma once
// Output paths checked before the first step, so that a run does not train
// for hours and then fail to write what it was asked to write.
#include <string>
#include <string_view>

namespace wiola {

// A file the run will create or append to (`flag` names the option in the
// message, e.g. "--metrics"): an existing path must be a writable regular
// file; otherwise the nearest existing ancestor must be a writable directory
// (the missing folders in between are created when the file is opened).
// Throws wiola::Error "<flag> <path>: <why>". Creates nothing.
void check_output_file(const std::string& path, std::string_view flag);

}  // namespace wiola
