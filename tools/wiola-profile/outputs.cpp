#include "wiola-profile/outputs.hpp"

#include <cstdio>
#include <filesystem>

#include "core/error.hpp"
#include "profile/trace.hpp"
#include "wiola-profile/files.hpp"
#include "wiola-profile/picture.hpp"
#include "wiola-profile/report.hpp"

namespace wiola::profile {

namespace {

std::string prepare(const std::string& dir, const char* name) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  require(!ec, "--out: cannot create '", dir, "': ", ec.message());
  return (std::filesystem::path(dir) / name).string();
}

std::vector<std::vector<TimedAction>> actions_of(const std::vector<RankRecord>& records) {
  std::vector<std::vector<TimedAction>> a;
  for (const RankRecord& r : records) a.push_back(r.actions);
  return a;
}

}  // namespace

std::vector<std::string> write_profile_outputs(const std::string& dir, const ProfileResult& r,
                                               bool with_trace) {
  std::vector<std::string> paths;
  paths.push_back(prepare(dir, "profile.csv"));
  write_text_file(paths.back(), profile_csv(r));
  paths.push_back(prepare(dir, "profile.json"));
  write_text_file(paths.back(), profile_json(r).dump(1) + "\n");
  if (with_trace) {
    const Trace t = build_trace(r.layout, actions_of(r.records));
    const Json other = {{"tool", "wiola-profile"},
                        {"model", r.layout.model.describe()},
                        {"layout", r.layout.describe()},
                        {"measured_steps", r.measured_steps},
                        {"time_origin",
                         "rank 0's exit from the world barrier after the warm-up steps; other "
                         "ranks' clocks are offset to rank 0's by ping-pong"}};
    paths.push_back(prepare(dir, "trace.json"));
    write_text_file(paths.back(), t.to_json(other).dump() + "\n");
    // Its picture beside it: per-rank action bars of the first measured steps.
    const Picture pic = draw_timeline(paths.back(), prepare(dir, "timeline.png"));
    if (pic.written)
      paths.push_back(pic.path);
    else
      std::fprintf(stderr, "wiola-profile: no timeline.png: %s\n", pic.why.c_str());
  }
  return paths;
}

std::vector<std::string> write_sweep_outputs(const std::string& dir,
                                             const std::vector<SweepRow>& rows) {
  std::vector<std::string> paths{prepare(dir, "sweep.csv")};
  write_text_file(paths.back(), sweep_csv(rows));
  return paths;
}

std::vector<std::string> write_projection_outputs(const std::string& dir, const Projection& p,
                                                  bool with_trace) {
  std::vector<std::string> paths{prepare(dir, "projection.json")};
  write_text_file(paths.back(), projection_json(p).dump(1) + "\n");
  if (with_trace) {
    const Trace t = build_trace(p.spec.layout, actions_of(p.sim.records));
    const Json other = {{"tool", "wiola-profile --project"},
                        {"model", p.spec.layout.model.describe()},
                        {"layout", p.spec.layout.describe()},
                        {"simulated", true}};
    paths.push_back(prepare(dir, "projected-trace.json"));
    write_text_file(paths.back(), t.to_json(other).dump() + "\n");
  }
  return paths;
}

}  // namespace wiola::profile
