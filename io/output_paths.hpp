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

// What `require_writable_folder(dir, option, true)` checks, creating nothing
// (wiola-train --dry-run): an existing `dir` can hold new files, or its
// nearest existing ancestor is a folder that can.
void require_creatable_folder(const std::string& dir, std::string_view option);

// A file can be written at `path`: its folder exists (it is not created) and
// can hold new files, and `path` is not a folder. Nothing is left behind.
void require_writable_file(const std::string& path, std::string_view option);

// A file the run appends to (--metrics): an existing `path` must be a writable
// regular file; otherwise the nearest existing ancestor must be a folder that
// can be written (the folders in between are created when the file is
// opened). Creates nothing.
void require_appendable_file(const std::string& path, std::string_view option);

}  // namespace wiola
