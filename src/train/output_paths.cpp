#include "train/output_paths.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace fs = std::filesystem;

namespace wiola {

namespace {

bool writable(const fs::path& p) { return ::access(p.c_str(), W_OK) == 0; }

}  // namespace

void check_output_file(const std::string& path, std::string_view flag) {
  require(!path.empty(), flag, ": the path is empty");
  std::error_code ec;
  const fs::path p(path);
  const fs::file_status st = fs::status(p, ec);
  if (fs::exists(st)) {
    require(!fs::is_directory(st), flag, " ", path, ": is a directory, not a file");
    require(writable(p), flag, " ", path, ": cannot be written (", std::strerror(errno), ")");
    return;
  }
  // The nearest ancestor that exists must be a directory we may write into.
  fs::path dir = fs::absolute(p, ec).parent_path();
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  require(fs::is_directory(dir, ec), flag, " ", path, ": ", dir.string(),
          " is not a directory");
  require(writable(dir), flag, " ", path, ": cannot create it in ", dir.string(), " (",
          std::strerror(errno), ")");
}

}  // namespace wiola
