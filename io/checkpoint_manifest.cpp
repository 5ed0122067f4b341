#include "io/checkpoint_manifest.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "core/error.hpp"

namespace wiola {

const char* state_kind_name(StateKind k) {
  switch (k) {
    case StateKind::Param: return "param";
    case StateKind::ExpAvg: return "exp_avg";
    case StateKind::ExpAvgSq: return "exp_avg_sq";
  }
  return "?";
}

namespace {

// The pieces of one tensor and kind agree on its shape and do not overlap: a
// reader counts the elements they cover, so an overlap would hide a gap.
void check_pieces(const std::vector<CheckpointPiece>& pieces, const std::string& where) {
  std::vector<const CheckpointPiece*> order;
  order.reserve(pieces.size());
  for (const CheckpointPiece& p : pieces) order.push_back(&p);
  std::sort(order.begin(), order.end(), [](const CheckpointPiece* a, const CheckpointPiece* b) {
    return std::tie(a->tensor, a->kind, a->begin) < std::tie(b->tensor, b->kind, b->begin);
  });
  for (std::size_t i = 1; i < order.size(); ++i) {
    const CheckpointPiece& a = *order[i - 1];
    const CheckpointPiece& b = *order[i];
    if (a.tensor != b.tensor || a.kind != b.kind) continue;
    const std::string what = where + ": tensor '" + a.tensor + "' (" + state_kind_name(a.kind) + ")";
    require(a.rows == b.rows && a.cols == b.cols, what, ": its pieces disagree on its shape (",
            a.rows, "x", a.cols, " in ", a.file, ", ", b.rows, "x", b.cols, " in ", b.file, ")");
    require(a.end <= b.begin, what, ": pieces [", a.begin, ", ", a.end, ") in ", a.file, " and [",
            b.begin, ", ", b.end, ") in ", b.file, " overlap");
  }
}

StateKind parse_kind(const std::string& s, const std::string& where) {
  if (s == "param") return StateKind::Param;
  if (s == "exp_avg") return StateKind::ExpAvg;
  if (s == "exp_avg_sq") return StateKind::ExpAvgSq;
  fail(where, ": unknown state kind '", s, "'");
}

// A double as C99 hexadecimal text (printf's %a): its bits survive the trip.
std::string exact_double_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

bool parse_exact_double(const std::string& s, double& v) {
  char* end = nullptr;
  errno = 0;
  v = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && errno == 0;
}

}  // namespace

std::string CheckpointManifest::to_text() const {
  std::ostringstream os;
  os << "wiola-checkpoint " << kCheckpointVersion << "\n"
     << "step " << step << "\n"
     << "consumed_samples " << consumed_samples << "\n"
     << "updates " << updates << "\n"
     << "loss_window " << loss_window.steps << " " << exact_double_text(loss_window.sum) << "\n"
     << "optimizer_state " << (has_optimizer_state ? 1 : 0) << "\n"
     << "code " << code_version << "\n"
     << "layout " << layout << "\n"
     << "model " << model << "\n"
     << "config-begin\n"
     << config << (config.empty() || config.back() == '\n' ? "" : "\n") << "config-end\n";
  for (const CheckpointFile& f : files)
    os << "file " << f.name << " " << f.bytes << " " << std::hex << f.crc32 << std::dec << "\n";
  for (const CheckpointPiece& p : pieces)
    os << "piece " << p.tensor << " " << state_kind_name(p.kind) << " " << p.rows << " " << p.cols
       << " " << p.begin << " " << p.end << " " << p.file << " " << p.dataset << "\n";
  os << "end\n";
  return os.str();
}

CheckpointManifest CheckpointManifest::parse(const std::string& text, const std::string& where) {
  CheckpointManifest m;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool ended = false, in_config = false;
  auto bad = [&](const std::string& why) {
    fail(where, " line ", lineno, ": ", why, " ('", line, "')");
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (in_config) {
      if (line == "config-end")
        in_config = false;
      else
        m.config += line + "\n";
      continue;
    }
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (lineno == 1) {
      int version = 0;
      if (key != "wiola-checkpoint" || !(ls >> version)) bad("not a wiola checkpoint manifest");
      if (version != kCheckpointVersion)
        bad("checkpoint format version " + std::to_string(version) + " is not supported");
      continue;
    }
    auto rest = [&] {
      std::string r;
      std::getline(ls, r);
      return r.empty() ? r : r.substr(1);
    };
    if (key == "step") {
      if (!(ls >> m.step)) bad("bad step");
    } else if (key == "consumed_samples") {
      if (!(ls >> m.consumed_samples)) bad("bad consumed_samples");
    } else if (key == "loss_window") {
      std::string sum;
      if (!(ls >> m.loss_window.steps >> sum) || m.loss_window.steps < 0 ||
          !parse_exact_double(sum, m.loss_window.sum))
        bad("bad loss_window (want: steps, then the sum as a C99 hexadecimal float)");
    } else if (key == "updates") {
      if (!(ls >> m.updates)) bad("bad updates");
    } else if (key == "optimizer_state") {
      int v = 0;
      if (!(ls >> v)) bad("bad optimizer_state");
      m.has_optimizer_state = v != 0;
    } else if (key == "code") {
      m.code_version = rest();
    } else if (key == "layout") {
      m.layout = rest();
    } else if (key == "model") {
      m.model = rest();
    } else if (key == "config-begin") {
      in_config = true;
    } else if (key == "file") {
      CheckpointFile f;
      if (!(ls >> f.name >> f.bytes >> std::hex >> f.crc32 >> std::dec)) bad("bad file line");
      m.files.push_back(f);
    } else if (key == "piece") {
      CheckpointPiece p;
      std::string kind;
      if (!(ls >> p.tensor >> kind >> p.rows >> p.cols >> p.begin >> p.end >> p.file >> p.dataset))
        bad("bad piece line");
      p.kind = parse_kind(kind, where);
      std::int64_t numel = 0;
      if (p.rows <= 0 || p.cols <= 0 || __builtin_mul_overflow(p.rows, p.cols, &numel))
        bad("piece shape is not two positive dimensions of at most 2^63 - 1 elements");
      if (p.begin < 0 || p.begin >= p.end || p.end > numel) bad("piece range outside its tensor");
      m.pieces.push_back(p);
    } else if (key == "end") {
      ended = true;
      break;
    } else if (!key.empty()) {
      bad("unknown entry '" + key + "'");
    }
  }
  if (lineno == 0) fail(where, ": empty manifest");
  require(ended, where, ": manifest is truncated (no 'end' line)");
  check_pieces(m.pieces, where);
  return m;
}

void write_text_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    require(fd >= 0, tmp, ": cannot create");
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n <= 0) {
        ::close(fd);
        fail(tmp, ": write failed");
      }
      done += static_cast<std::size_t>(n);
    }
    const bool synced = ::fsync(fd) == 0;
    ::close(fd);
    require(synced, tmp, ": fsync failed");
  }
  require(std::rename(tmp.c_str(), path.c_str()) == 0, path, ": cannot rename ", tmp, " into place");
}

}  // namespace wiola
