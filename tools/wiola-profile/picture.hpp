#pragma once
// The timeline picture beside trace.json, drawn by tools/wiola-plot
// (Debian's /usr/bin/python3 with python3-matplotlib): the same plotting
// route as the training pictures, so the tool itself links no plotting code.
#include <string>

namespace wiola::profile {

struct Picture {
  bool written = false;
  std::string path;  // the picture, when written
  std::string why;   // why not, otherwise
};

// Draws `trace_json` into `png` (per-rank action bars). Never throws: a
// missing Python, matplotlib or script is a reason, not an error.
Picture draw_timeline(const std::string& trace_json, const std::string& png);

}  // namespace wiola::profile
