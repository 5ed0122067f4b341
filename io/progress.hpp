#pragma once
// A progress line on a terminal: done / total bytes, percent, a bar, bytes/s
// and the time left. On a terminal it redraws one line (at most 5 times a
// second); elsewhere (a log file) it prints a line every 10 seconds.
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace wiola {

class Progress {
 public:
  // `interactive`: redraw in place ('\r'); usually isatty(stderr). `unit`:
  // empty for bytes (kB, MB, ...), else the name of what is counted ("merges").
  Progress(std::string label, std::int64_t total, std::ostream& out, bool interactive,
           bool enabled = true, std::string unit = "");
  // For std::cerr, interactive when stderr is a terminal.
  static Progress on_stderr(std::string label, std::int64_t total, bool enabled = true,
                            std::string unit = "");

  void update(std::int64_t done_bytes, const std::string& extra = "");
  void finish(std::int64_t done_bytes, const std::string& extra = "");
  double seconds() const;

  static std::string bytes_text(double bytes);  // "12.3 MB"

 private:
  std::string line(std::int64_t done, const std::string& extra) const;
  std::string amount(double v) const;
  std::string label_, unit_;
  std::int64_t total_;
  std::ostream& out_;
  bool interactive_, enabled_;
  std::chrono::steady_clock::time_point start_, last_;
  std::size_t last_width_ = 0;
};

}  // namespace wiola
