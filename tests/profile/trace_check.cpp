#include "trace_check.hpp"

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace wiola::profile::testing {

namespace {

template <class... Args>
std::string msg(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// The member `key` of an object; null when `j` is no object or has no such member.
const Json* member(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

const Json* find_path(const Json& j, std::initializer_list<const char*> keys) {
  const Json* cur = &j;
  for (const char* k : keys) {
    cur = member(*cur, k);
    if (!cur) return nullptr;
  }
  return cur;
}

}  // namespace

std::vector<std::string> check_trace(const Json& trace, const ExpectedRun& run) {
  std::vector<std::string> problems;
  auto problem = [&](const std::string& s) {
    if (problems.size() < 40) problems.push_back(s);
  };
  const Json* events = member(trace, "traceEvents");
  if (!events || !events->is_array()) return {"no traceEvents array"};
  const int world = run.pp * run.dp;

  std::set<int> named_tracks;
  std::map<std::pair<int, int>, double> last_ts;  // (pid, tid) -> last timestamp
  // rank -> step -> compute order as text ("F0 F1 B0 ...")
  std::map<int, std::map<int, std::vector<std::string>>> order;
  // (rank, name, step, microbatch, chunk) -> count
  std::map<std::tuple<int, std::string, int, int, int>, int> count;
  std::map<long long, int> flows;  // id -> +1 for 's', -1 for 'f'
  int expected_flows = 0;
  // Where each flow starts and ends (rank, ts), and the slices by (rank, ts):
  // an arrow must leave the send of the micro-batch's message on the
  // neighbouring virtual stage and end at the compute that waited for it.
  std::map<long long, std::pair<std::pair<int, double>, std::pair<int, double>>> flow_ends;
  struct Slice {
    std::string name;
    int microbatch, chunk;
  };
  std::multimap<std::pair<int, double>, Slice> slices;

  for (const Json& e : *events) {
    const Json* ph = member(e, "ph");
    const Json* pid = member(e, "pid");
    const Json* tid = member(e, "tid");
    if (!ph || !ph->is_string() || !pid || !pid->is_number() || !tid || !tid->is_number()) {
      problem("an event without ph/pid/tid");
      continue;
    }
    const int p = pid->get<int>(), t = tid->get<int>();
    if (t < 0 || t >= world || p != t / run.dp) {
      problem(msg("event on track pid ", p, " tid ", t, ": not a rank of a ", run.pp, " x ",
                  run.dp, " grid (pid = stage, tid = rank)"));
      continue;
    }
    const std::string phase = ph->get<std::string>();
    const Json* name = member(e, "name");
    if (!name || !name->is_string()) {
      problem("an event without a name");
      continue;
    }
    if (phase == "M") {
      if (name->get<std::string>() == "thread_name") named_tracks.insert(t);
      continue;
    }
    const Json* ts = member(e, "ts");
    if (!ts || !ts->is_number() || !std::isfinite(ts->get<double>())) {
      problem(msg("rank ", t, ": event '", name->get<std::string>(), "' without a finite ts"));
      continue;
    }
    const double now = ts->get<double>();
    auto [it, fresh] = last_ts.try_emplace({p, t}, now);
    if (!fresh) {
      if (now < it->second)
        problem(msg("rank ", t, ": timestamps go back at '", name->get<std::string>(), "' (", now,
                    " after ", it->second, ")"));
      it->second = now;
    }
    if (phase == "s" || phase == "f") {
      const Json* id = member(e, "id");
      if (!id || !id->is_number()) {
        problem("a flow event without an id");
        continue;
      }
      flows[id->get<long long>()] += phase == "s" ? 1 : -1;
      auto& ends = flow_ends[id->get<long long>()];
      (phase == "s" ? ends.first : ends.second) = {t, now};
      continue;
    }
    if (phase != "X") {
      problem(msg("unexpected phase '", phase, "'"));
      continue;
    }
    const Json* dur = member(e, "dur");
    if (!dur || !dur->is_number() || !(dur->get<double>() >= 0))
      problem(msg("rank ", t, ": '", name->get<std::string>(), "' has no non-negative dur"));
    const Json* args = member(e, "args");
    const Json* step = args ? member(*args, "step") : nullptr;
    const Json* mb = args ? member(*args, "microbatch") : nullptr;
    const std::string n = name->get<std::string>();
    if (n == "wait" || n.rfind("step ", 0) == 0) continue;
    if (!step || !step->is_number()) {
      problem(msg("rank ", t, ": '", n, "' without args.step"));
      continue;
    }
    const int s = step->get<int>(), m = mb && mb->is_number() ? mb->get<int>() : -1;
    const Json* ch = args ? member(*args, "chunk") : nullptr;
    const int c = ch && ch->is_number() ? ch->get<int>() : 0;
    if (s < 1 || s > run.steps) problem(msg("rank ", t, ": '", n, "' in step ", s));
    ++count[{t, n, s, m, c}];
    slices.insert({{t, now}, Slice{n, m, c}});
    if (n == "Forward" || n == "Backward" || n == "BackwardInput" || n == "BackwardWeight")
      order[t][s].push_back(msg(n, m, "@", c));
  }

  for (int r = 0; r < world; ++r) {
    if (!named_tracks.count(r)) problem(msg("rank ", r, " has no named track"));
    const int stage = r / run.dp;
    const auto list =
        pipeline::make_schedule(run.schedule, run.pp, stage, run.microbatches, run.chunks);
    std::vector<std::string> expected_order;
    for (const auto& a : list) {
      const char* n = a.kind == pipeline::ActionKind::Forward          ? "Forward"
                      : a.kind == pipeline::ActionKind::Backward       ? "Backward"
                      : a.kind == pipeline::ActionKind::BackwardInput  ? "BackwardInput"
                      : a.kind == pipeline::ActionKind::BackwardWeight ? "BackwardWeight"
                                                                        : nullptr;
      if (n) expected_order.push_back(msg(n, a.microbatch, "@", a.chunk));
      // One arrow into every compute that waits for a message.
      if (a.kind == pipeline::ActionKind::RecvActivation ||
          a.kind == pipeline::ActionKind::RecvGrad)
        expected_flows += run.steps;
    }
    for (int s = 1; s <= run.steps; ++s) {
      for (const auto& a : list) {
        const char* n = nullptr;
        switch (a.kind) {
          case pipeline::ActionKind::RecvActivation: n = "RecvActivation"; break;
          case pipeline::ActionKind::Forward: n = "Forward"; break;
          case pipeline::ActionKind::SendActivation: n = "SendActivation"; break;
          case pipeline::ActionKind::RecvGrad: n = "RecvGrad"; break;
          case pipeline::ActionKind::Backward: n = "Backward"; break;
          case pipeline::ActionKind::SendGrad: n = "SendGrad"; break;
          case pipeline::ActionKind::BackwardInput: n = "BackwardInput"; break;
          case pipeline::ActionKind::BackwardWeight: n = "BackwardWeight"; break;
        }
        const int got = count[{r, n, s, a.microbatch, a.chunk}];
        if (got != 1)
          problem(msg("rank ", r, " step ", s, ": ", got, " '", n, "' events for micro-batch ",
                      a.microbatch, " chunk ", a.chunk, " (expected 1)"));
      }
      // The trainer's two phases after the list, once per step.
      for (const char* n : {"ReduceGrads", "OptimizerStep"}) {
        const int got = count[{r, n, s, -1, 0}];
        if (got != 1)
          problem(msg("rank ", r, " step ", s, ": ", got, " '", n, "' events (expected 1)"));
      }
      // The order of a rank's compute in time is the schedule's (the 1F1B pattern).
      const auto it = order[r].find(s);
      const std::vector<std::string> got = it == order[r].end() ? std::vector<std::string>{} : it->second;
      if (got != expected_order) {
        std::string g, x;
        for (const auto& v : got) g += msg(v, ' ');
        for (const auto& v : expected_order) x += msg(v, ' ');
        problem(msg("rank ", r, " step ", s, ": compute order [", g, "] is not the schedule's [",
                    x, "]"));
      }
    }
  }
  for (const auto& [id, balance] : flows)
    if (balance != 0) problem(msg("flow ", id, " is not closed"));
  auto slice_at = [&](std::pair<int, double> at, auto&& wanted) -> const Slice* {
    const auto [lo, hi] = slices.equal_range(at);
    for (auto it = lo; it != hi; ++it)
      if (wanted(it->second.name)) return &it->second;
    return nullptr;
  };
  for (const auto& [id, ends] : flow_ends) {
    const Slice* send = slice_at(ends.first, [](const std::string& n) { return n.rfind("Send", 0) == 0; });
    const Slice* into = slice_at(ends.second, [](const std::string& n) {
      return n == "Forward" || n == "Backward" || n == "BackwardInput";
    });
    if (!send || !into) {
      problem(msg("flow ", id, " does not leave a send or does not end at a compute slice"));
      continue;
    }
    const int from = send->chunk * run.pp + ends.first.first / run.dp;
    const int to = into->chunk * run.pp + ends.second.first / run.dp;
    const bool activation = send->name == "SendActivation";
    if (send->microbatch != into->microbatch || to != from + (activation ? 1 : -1) ||
        activation != (into->name == "Forward"))
      problem(msg("flow ", id, ": ", send->name, " of micro-batch ", send->microbatch,
                  " from virtual stage ", from, " ends at ", into->name, " of micro-batch ",
                  into->microbatch, " on virtual stage ", to));
  }
  if (static_cast<int>(flows.size()) != expected_flows)
    problem(msg(flows.size(), " message arrows, expected ", expected_flows,
                " (one per received activation or gradient)"));
  return problems;
}

std::vector<std::string> check_profile_json(const Json& p, const ExpectedRun& run) {
  std::vector<std::string> problems;
  auto expect_int = [&](std::initializer_list<const char*> path, int want, const char* what) {
    const Json* j = find_path(p, path);
    if (!j || !j->is_number() || j->get<int>() != want)
      problems.push_back(msg("profile.json: ", what, " is not ", want));
  };
  expect_int({"layout", "pp"}, run.pp, "layout.pp");
  expect_int({"layout", "dp"}, run.dp, "layout.dp");
  expect_int({"layout", "microbatches"}, run.microbatches, "layout.microbatches");
  expect_int({"steps", "measured"}, run.steps, "steps.measured");
  const Json* tps = find_path(p, {"overall", "tokens_per_s"});
  if (!tps || !tps->is_number() || !(tps->get<double>() > 0))
    problems.push_back("profile.json: overall.tokens_per_s is not positive");
  const Json* ranks = member(p, "ranks");
  if (!ranks || !ranks->is_array() || int(ranks->size()) != run.pp * run.dp) {
    problems.push_back("profile.json: ranks is not one entry per rank");
    return problems;
  }
  for (const Json& r : *ranks) {
    const double step = r.at("step_s").get<double>();
    double parts = 0;
    for (const char* k : {"compute_s", "wait_s", "drain_s", "comm_s", "reduce_s", "optimizer_s"}) {
      const double v = r.at(k).get<double>();
      if (v < 0) problems.push_back(msg("rank ", r.at("rank").get<int>(), ": ", k, " < 0"));
      parts += v;
    }
    // What the executor counted cannot exceed the wall time of the step.
    if (!(step > 0) || parts > step * 1.01 + 1e-4)
      problems.push_back(msg("rank ", r.at("rank").get<int>(), ": parts ", parts,
                             " s exceed the step ", step, " s"));
  }
  return problems;
}

}  // namespace wiola::profile::testing
