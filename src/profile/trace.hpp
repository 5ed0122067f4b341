#pragma once
// Chrome trace / Perfetto timelines (the JSON "Trace Event Format"): one
// track per rank, pid = pipeline stage, tid = world rank, so replicas of a
// stage are grouped. Open trace.json in https://ui.perfetto.dev or
// chrome://tracing. docs/profiling.md lists the slices.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "profile/layout.hpp"
#include "profile/recorder.hpp"

namespace wiola::profile {

class Trace {
 public:
  using Json = nlohmann::ordered_json;

  // Returns the track index.
  int add_track(int pid, int tid, std::string process_name, std::string thread_name);
  // A complete ("X") slice; times in seconds.
  void add_slice(int track, std::string name, std::string category, double begin_s, double end_s,
                 Json args = Json::object());
  // An arrow from a point inside a slice on one track to the slice that
  // starts at `to_s` on another (flow events "s" / "f").
  void add_flow(std::string name, int from_track, double from_s, int to_track, double to_s);
  std::size_t slices() const;

  // {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": other}.
  // Each track's events are sorted by time (enclosing slices first).
  Json to_json(Json other) const;

 private:
  struct Event {
    char phase = 'X';  // 'X', 's', 'f'
    std::string name, category;
    double ts = 0, dur = 0;  // seconds
    long long flow_id = 0;
    Json args;
  };
  struct Track {
    int pid = 0, tid = 0;
    std::string process_name, thread_name;
    std::vector<Event> events;
  };
  std::vector<Track> tracks_;
  long long next_flow_ = 1;
};

// The timeline of one rank per track from per-rank actions (measured, or
// simulated): a "step N" slice per step; Forward / Backward per micro-batch
// (compute after any wait) preceded by a "wait" slice when the action was
// blocked on a peer; the posts of sends and receives; ReduceGrads
// (gradient reduction) and OptimizerStep; arrows from each send to the
// compute that consumed the message. `actions[r]` belongs to world rank r.
Trace build_trace(const RunLayout& layout, const std::vector<std::vector<TimedAction>>& actions);

}  // namespace wiola::profile
