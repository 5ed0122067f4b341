#include "wiola-profile/picture.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace fs = std::filesystem;

namespace wiola::profile {

namespace {

// A path as one single-quoted shell word.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// $WIOLA_PLOT, wiola-plot installed beside this binary, or the source tree's.
std::string find_plot_script() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("WIOLA_PLOT")) candidates.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path() / "wiola-plot");
#ifdef WIOLA_PLOT_SOURCE
  candidates.emplace_back(WIOLA_PLOT_SOURCE);
#endif
  for (const fs::path& c : candidates)
    if (fs::is_regular_file(c, ec)) return c.string();
  return "";
}

}  // namespace

Picture draw_timeline(const std::string& trace_json, const std::string& png) {
  Picture p;
  const std::string python = "/usr/bin/python3";
  std::error_code ec;
  if (!fs::exists(python, ec)) {
    p.why = python + " is missing (tools/install-deps.sh)";
    return p;
  }
  const std::string script = find_plot_script();
  if (script.empty()) {
    p.why = "tools/wiola-plot not found (set WIOLA_PLOT)";
    return p;
  }
  const std::string err = png + ".log";
  const std::string cmd = quoted(python) + " " + quoted(script) + " --trace " + quoted(trace_json) +
                          " --out " + quoted(png) + " > /dev/null 2> " + quoted(err);
  const int rc = std::system(cmd.c_str());
  if (rc == 0 && fs::exists(png, ec)) {
    fs::remove(err, ec);
    p.written = true;
    p.path = png;
  } else {
    p.why = "wiola-plot failed (see " + err + "; matplotlib: tools/install-deps.sh)";
  }
  return p;
}

}  // namespace wiola::profile
