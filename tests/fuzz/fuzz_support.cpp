#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fuzz/fuzz_target.hpp"

namespace wiola::fuzz {

std::vector<Target>& registry() {
  static std::vector<Target> targets;
  return targets;
}

Outcomes& outcomes() {
  static Outcomes o;
  return o;
}

void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz: BUG: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

void check_refusal(const std::string& where, const char* message) {
  if (!where.empty() && std::string_view(message).find(where) == std::string_view::npos)
    bug("a refusal that does not name '" + where + "': " + message);
}

namespace {

// The scratch folder, made on first use and removed when the process exits.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/wiola-fuzz-XXXXXX";
    if (!mkdtemp(templ.data())) bug("cannot make a scratch folder under " + templ);
    path = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::string scratch_file(const std::string& name, std::string_view bytes) {
  static ScratchDir dir;
  const std::string path = (dir.path / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) bug("cannot write the scratch file " + path);
  return path;
}

}  // namespace wiola::fuzz
