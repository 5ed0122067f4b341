#include "profile/trace.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/error.hpp"

namespace wiola::profile {

using Json = Trace::Json;

int Trace::add_track(int pid, int tid, std::string process_name, std::string thread_name) {
  tracks_.push_back({pid, tid, std::move(process_name), std::move(thread_name), {}});
  return int(tracks_.size()) - 1;
}

void Trace::add_slice(int track, std::string name, std::string category, double begin_s,
                      double end_s, Json args) {
  Event e;
  e.phase = 'X';
  e.name = std::move(name);
  e.category = std::move(category);
  e.ts = begin_s;
  e.dur = std::max(0.0, end_s - begin_s);
  e.args = std::move(args);
  tracks_.at(std::size_t(track)).events.push_back(std::move(e));
}

void Trace::add_flow(std::string name, int from_track, double from_s, int to_track, double to_s) {
  const long long id = next_flow_++;
  Event s;
  s.phase = 's';
  s.name = name;
  s.category = "transfer";
  s.ts = from_s;
  s.flow_id = id;
  tracks_.at(std::size_t(from_track)).events.push_back(s);
  Event f = s;
  f.phase = 'f';
  f.ts = to_s;
  tracks_.at(std::size_t(to_track)).events.push_back(f);
}

std::size_t Trace::slices() const {
  std::size_t n = 0;
  for (const Track& t : tracks_)
    for (const Event& e : t.events) n += e.phase == 'X';
  return n;
}

Json Trace::to_json(Json other) const {
  Json events = Json::array();
  auto meta = [&](const Track& t, const char* what, Json args) {
    events.push_back(
        {{"name", what}, {"ph", "M"}, {"pid", t.pid}, {"tid", t.tid}, {"args", std::move(args)}});
  };
  std::map<int, bool> named_process;
  for (const Track& t : tracks_) {
    if (!named_process[t.pid]) {
      named_process[t.pid] = true;
      meta(t, "process_name", {{"name", t.process_name}});
      meta(t, "process_sort_index", {{"sort_index", t.pid}});
    }
    meta(t, "thread_name", {{"name", t.thread_name}});
    meta(t, "thread_sort_index", {{"sort_index", t.tid}});
  }
  for (const Track& t : tracks_) {
    std::vector<const Event*> order;
    for (const Event& e : t.events) order.push_back(&e);
    // By start time; at equal starts the longer (enclosing) slice first.
    std::stable_sort(order.begin(), order.end(), [](const Event* a, const Event* b) {
      return std::make_tuple(a->ts, -a->dur) < std::make_tuple(b->ts, -b->dur);
    });
    for (const Event* e : order) {
      Json j = {{"name", e->name},  {"cat", e->category}, {"ph", std::string(1, e->phase)},
                {"ts", e->ts * 1e6}, {"pid", t.pid},       {"tid", t.tid}};
      if (e->phase == 'X') {
        j["dur"] = e->dur * 1e6;
        if (!e->args.empty()) j["args"] = e->args;
      } else {
        j["id"] = e->flow_id;
        if (e->phase == 'f') j["bp"] = "e";
      }
      events.push_back(std::move(j));
    }
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", std::move(other)}};
}

namespace {

using Kind = EventKind;

const char* slice_name(Kind k) {
  switch (k) {
    case Kind::RecvActivation: return "RecvActivation";
    case Kind::Forward: return "Forward";
    case Kind::SendActivation: return "SendActivation";
    case Kind::RecvGrad: return "RecvGrad";
    case Kind::Backward: return "Backward";
    case Kind::SendGrad: return "SendGrad";
    case Kind::ReduceGrads: return "ReduceGrads";
    case Kind::OptimizerStep: return "OptimizerStep";
    case Kind::BackwardInput: return "BackwardInput";
    case Kind::BackwardWeight: return "BackwardWeight";
  }
  return "?";
}

const char* category(Kind k) {
  switch (k) {
    case Kind::Forward: return "forward";
    case Kind::Backward:
    case Kind::BackwardInput:
    case Kind::BackwardWeight: return "backward";
    case Kind::RecvActivation:
    case Kind::RecvGrad: return "recv";
    case Kind::SendActivation:
    case Kind::SendGrad: return "send";
    case Kind::ReduceGrads: return "reduce";
    case Kind::OptimizerStep: return "optimizer";
  }
  return "?";
}

}  // namespace

Trace build_trace(const RunLayout& layout, const std::vector<std::vector<TimedAction>>& actions) {
  require(int(actions.size()) == layout.world(), "trace: ", actions.size(),
          " action lists for a world of ", layout.world());
  Trace trace;
  std::vector<int> track(actions.size());
  for (int r = 0; r < layout.world(); ++r) {
    const int stage = r / layout.dp, dp_index = r % layout.dp;
    std::string pname = "stage ";
    pname += std::to_string(stage);
    if (layout.virtual_stages > 1) {
      pname += " (layers " + layout.rank_layers(stage) + ")";
    } else {
      const StageSpec& sp = layout.stages.at(std::size_t(stage));
      pname += " (layers " + std::to_string(sp.first_layer) + "-" +
               std::to_string(sp.end_layer - 1) + ")";
    }
    std::string tname = "rank ";
    tname += std::to_string(r);
    tname += " (dp " + std::to_string(dp_index) + ")";
    track[std::size_t(r)] = trace.add_track(stage, r, pname, tname);
  }
  // (step, dp index, kind of message, virtual stage that sends, micro-batch) -> (send time)
  std::map<std::tuple<int, int, int, int, int>, double> sends;
  const int P = layout.pp, last_virtual = P * std::max(layout.virtual_stages, 1) - 1;
  for (int r = 0; r < layout.world(); ++r) {
    const int tr = track[std::size_t(r)];
    std::map<int, std::pair<double, double>> step_span;
    for (const TimedAction& a : actions[std::size_t(r)]) {
      auto [it, fresh] = step_span.try_emplace(a.step, a.begin, a.end);
      if (!fresh) {
        it->second.first = std::min(it->second.first, a.begin);
        it->second.second = std::max(it->second.second, a.end);
      }
      Json args = {{"step", a.step}};
      if (a.microbatch >= 0) args["microbatch"] = a.microbatch;
      if (layout.virtual_stages > 1 && a.microbatch >= 0) args["chunk"] = a.chunk;
      double begin = a.begin;
      const bool compute =
          a.kind == Kind::Forward || a.kind == Kind::Backward || a.kind == Kind::BackwardInput;
      if (compute && a.waited > 0) {
        // The wait comes first: Forward / Backward block on their receive, then compute.
        begin = std::min(a.end, a.begin + a.waited);
        trace.add_slice(tr, "wait", "bubble", a.begin, begin,
                        {{"step", a.step},
                         {"microbatch", a.microbatch},
                         {"for", a.kind == Kind::Forward ? "activation" : "gradient"}});
      }
      trace.add_slice(tr, slice_name(a.kind), category(a.kind), begin, a.end, std::move(args));
      if (a.kind == Kind::SendActivation || a.kind == Kind::SendGrad)
        sends[{a.step, r % layout.dp, a.kind == Kind::SendGrad, a.chunk * P + r / layout.dp,
               a.microbatch}] = a.begin;
    }
    for (const auto& [step, span] : step_span)
      trace.add_slice(tr, "step " + std::to_string(step), "step", span.first, span.second,
                      {{"step", step}});
  }
  // Arrows: activation from virtual stage v-1 into Forward on v, gradient from v+1 into
  // Backward (or B) on v; virtual stage v = chunk * P + stage (the stage itself with one
  // chunk), so the wrap from the last rank to the first gets its arrows too.
  for (int r = 0; r < layout.world(); ++r) {
    const int stage = r / layout.dp, dpi = r % layout.dp;
    for (const TimedAction& a : actions[std::size_t(r)]) {
      const bool fwd = a.kind == Kind::Forward;
      const bool bwd = a.kind == Kind::Backward || a.kind == Kind::BackwardInput;
      const int v = a.chunk * P + stage;
      if ((!fwd && !bwd) || (fwd && v == 0) || (bwd && v == last_virtual)) continue;
      const int from_v = fwd ? v - 1 : v + 1;
      const auto it = sends.find({a.step, dpi, bwd ? 1 : 0, from_v, a.microbatch});
      if (it == sends.end()) continue;
      const int from_rank = (from_v % P) * layout.dp + dpi;
      trace.add_flow(fwd ? "activation" : "gradient", track[std::size_t(from_rank)], it->second,
                     track[std::size_t(r)], std::min(a.end, a.begin + a.waited));
    }
  }
  return trace;
}

}  // namespace wiola::profile
