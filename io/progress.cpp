#include "io/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "core/text.hpp"

namespace wiola {

using Clock = std::chrono::steady_clock;

Progress::Progress(std::string label, std::int64_t total, std::ostream& out, bool interactive,
                   bool enabled, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      out_(out),
      interactive_(interactive),
      enabled_(enabled),
      start_(Clock::now()),
      last_(start_) {}

Progress Progress::on_stderr(std::string label, std::int64_t total, bool enabled,
                            std::string unit) {
  return Progress(std::move(label), total, std::cerr, ::isatty(STDERR_FILENO) == 1, enabled,
                  std::move(unit));
}

std::string Progress::amount(double v) const {
  if (unit_.empty()) return bytes_text(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

double Progress::seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::string Progress::bytes_text(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string Progress::line(std::int64_t done, const std::string& extra) const {
  const double t = seconds();
  const double rate = t > 0 ? static_cast<double>(done) / t : 0;
  const double frac = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  constexpr int kBar = 24;
  const int filled = static_cast<int>(frac * kBar + 0.5);
  std::string s = label_;
  s += " [";
  for (int i = 0; i < kBar; ++i) s += i < filled ? '#' : '.';
  char pct[16];
  std::snprintf(pct, sizeof pct, "] %5.1f%% ", 100.0 * frac);
  s += pct;
  s += amount(static_cast<double>(done));
  s += " / ";
  s += amount(static_cast<double>(total_));
  if (!unit_.empty()) {
    s += ' ';
    s += unit_;
  }
  s += ", ";
  s += amount(rate);
  s += "/s, ETA ";
  s += rate > 0 && total_ > done ? duration_text(static_cast<double>(total_ - done) / rate)
                                 : std::string("0:00");
  if (!extra.empty()) {
    s += ", ";
    s += extra;
  }
  return s;
}

void Progress::update(std::int64_t done, const std::string& extra) {
  if (!enabled_) return;
  const auto now = Clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (since < (interactive_ ? 0.2 : 10.0)) return;
  last_ = now;
  const std::string s = line(done, extra);
  if (interactive_) {
    out_ << '\r' << s;
    if (s.size() < last_width_) out_ << std::string(last_width_ - s.size(), ' ');
    last_width_ = s.size();
  } else {
    out_ << s << '\n';
  }
  out_.flush();
}

void Progress::finish(std::int64_t done, const std::string& extra) {
  if (!enabled_) return;
  const std::string s = line(done, extra);
  if (interactive_) {
    out_ << '\r' << s;
    if (s.size() < last_width_) out_ << std::string(last_width_ - s.size(), ' ');
  } else {
    out_ << s;
  }
  out_ << '\n';
  out_.flush();
}

}  // namespace wiola
