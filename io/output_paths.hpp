#pragma once
// Output locations checked before any work: a run that can train for hours
// must not learn at its first checkpoint or at the end that it cannot write.
// Each check does what writing would do (creates the folder where the
// convention creates it) and then makes and removes a probe file there, so
// read-only mounts, missing folders, regular files in the way and /proc-like
// trees are refused up front with the path and the system's reason.
#include <string>
#include <string_view>

namespace wiola {

// `dir` (created with its parents when create is true) can hold new files.
// Throws wiola::Error "<option> <dir>: ..." naming the reason.
void require_writable_folder(const std::string& dir, std::string_view option, bool create);

// A file can be written at `path`: its folder exists (it is not created) and
// can hold new files, and `path` is not a folder. Nothing is left behind.
void require_writable_file(const std::string& path, std::string_view option);

}  // namespace wiola
