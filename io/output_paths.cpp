#include "io/output_paths.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.hpp"

namespace fs = std::filesystem;

namespace wiola {

namespace {

// Creates and removes a hidden file in `dir`, named after this host and
// process (ranks on several hosts may probe one shared folder at once); ""
// when that worked, else the system's reason.
std::string probe(const fs::path& dir) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const fs::path p =
      dir / (".wiola-write-test-" + std::string(host) + "-" + std::to_string(::getpid()));
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {  // left by a crashed process of the same name
    ::unlink(p.c_str());
    fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  }
  if (fd < 0) return std::strerror(errno);
  const bool wrote = ::write(fd, "x", 1) == 1;
  const int write_errno = errno;
  ::close(fd);
  ::unlink(p.c_str());
  return wrote ? "" : std::strerror(write_errno);
}

// Why `dir` is not an existing folder: the nearest existing ancestor is a
// file, or the folder is missing.
std::string missing_folder(const fs::path& dir) {
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && p != p.root_path(); p = p.parent_path())
    if (fs::exists(p, ec)) {
      if (!fs::is_directory(p, ec)) return p.string() + " is a file, not a folder";
      break;
    }
  return "the folder " + dir.string() + " does not exist";
}

// The nearest existing folder at or above `p`; refuses a file in the way.
fs::path nearest_existing_folder(const fs::path& p, const std::string& path,
                                 std::string_view option) {
  std::error_code ec;
  fs::path dir = fs::absolute(p, ec);
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  require(fs::is_directory(dir, ec), option, " ", path, ": ", dir.string(), " is not a folder");
  return dir;
}

}  // namespace

void require_creatable_folder(const std::string& dir, std::string_view option) {
  require(!dir.empty(), option, ": an empty path");
  const fs::path base = nearest_existing_folder(dir, dir, option);
  const std::string why = probe(base);
  require(why.empty(), option, " ", dir, ": cannot create files in ", base.string(), ": ", why);
}

void require_writable_folder(const std::string& dir, std::string_view option, bool create) {
  require(!dir.empty(), option, ": an empty path");
  std::error_code ec;
  const fs::path p(dir);
  if (create) {
    fs::create_directories(p, ec);
    if (ec) {
      const std::string why = missing_folder(p);
      fail(option, " ", dir, ": cannot create the folder: ", ec.message(),
           why.find(" is a file") != std::string::npos ? " (" + why + ")" : std::string());
    }
  }
  require(fs::is_directory(p, ec), option, " ", dir, ": ", missing_folder(p));
  const std::string why = probe(p);
  require(why.empty(), option, " ", dir, ": cannot create files in it: ", why);
}

void require_writable_file(const std::string& path, std::string_view option) {
  require(!path.empty(), option, ": an empty path");
  const fs::path p(path);
  std::error_code ec;
  require(!fs::is_directory(p, ec), option, " ", path, ": is a folder, not a file name");
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  require(fs::is_directory(parent, ec), option, " ", path, ": ", missing_folder(parent));
  const std::string why = probe(parent);
  require(why.empty(), option, " ", path, ": cannot create files in ", parent.string(), ": ",
          why);
}

void require_appendable_file(const std::string& path, std::string_view option) {
  require(!path.empty(), option, ": an empty path");
  std::error_code ec;
  const fs::path p(path);
  const fs::file_status st = fs::status(p, ec);
  if (fs::exists(st)) {
    require(!fs::is_directory(st), option, " ", path, ": is a folder, not a file name");
    require(::access(p.c_str(), W_OK) == 0, option, " ", path, ": cannot be written (",
            std::strerror(errno), ")");
    return;
  }
  const fs::path dir = nearest_existing_folder(fs::absolute(p, ec).parent_path(), path, option);
  const std::string why = probe(dir);
  require(why.empty(), option, " ", path, ": cannot create files in ", dir.string(), ": ", why);
}

}  // namespace wiola
