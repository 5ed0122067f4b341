#include "profile/recorder.hpp"

#include <cstring>

#include "core/error.hpp"
#include "profile/clock_sync.hpp"

namespace wiola::profile {

namespace {

constexpr int kTagSize = 4091, kTagData = 4092;
constexpr std::size_t kHeader = 17, kPerAction = 7;

std::vector<double> serialise(const RankRecord& r) {
  const TimeSplit& t = r.times;
  std::vector<double> v{double(r.rank), double(r.stage),  double(r.dp_index), double(r.steps),
                        t.compute,      t.wait,           t.drain,            t.comm,
                        t.reduce,       t.optimizer,      t.other,            t.step,
                        r.window_s,     r.peak_flops,     r.peak_rss_bytes,
                        double(r.step_ends.size()), double(r.actions.size())};
  v.insert(v.end(), r.step_ends.begin(), r.step_ends.end());
  for (const TimedAction& a : r.actions) {
    const double row[kPerAction] = {double(a.step), double(static_cast<int>(a.kind)),
                                    double(a.microbatch), a.begin, a.end, a.waited,
                                    double(a.chunk)};
    v.insert(v.end(), row, row + kPerAction);
  }
  return v;
}

RankRecord deserialise(const std::vector<double>& v) {
  require(v.size() >= kHeader, "profile: truncated rank record");
  RankRecord r;
  r.rank = int(v[0]);
  r.stage = int(v[1]);
  r.dp_index = int(v[2]);
  r.steps = int(v[3]);
  r.times = TimeSplit{v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]};
  r.window_s = v[12];
  r.peak_flops = v[13];
  r.peak_rss_bytes = v[14];
  const auto n_steps = std::size_t(v[15]), n_actions = std::size_t(v[16]);
  require(v.size() == kHeader + n_steps + kPerAction * n_actions, "profile: malformed rank record");
  r.step_ends.assign(v.begin() + kHeader, v.begin() + std::ptrdiff_t(kHeader + n_steps));
  const double* p = v.data() + kHeader + n_steps;
  for (std::size_t i = 0; i < n_actions; ++i, p += kPerAction)
    r.actions.push_back({int(p[0]), static_cast<EventKind>(int(p[1])), int(p[2]), p[3], p[4],
                         p[5], int(p[6])});
  return r;
}

}  // namespace

EventKind event_kind(pipeline::ActionKind k) {
  switch (k) {
    case pipeline::ActionKind::RecvActivation: return EventKind::RecvActivation;
    case pipeline::ActionKind::Forward: return EventKind::Forward;
    case pipeline::ActionKind::SendActivation: return EventKind::SendActivation;
    case pipeline::ActionKind::RecvGrad: return EventKind::RecvGrad;
    case pipeline::ActionKind::Backward: return EventKind::Backward;
    case pipeline::ActionKind::SendGrad: return EventKind::SendGrad;
    case pipeline::ActionKind::BackwardInput: return EventKind::BackwardInput;
    case pipeline::ActionKind::BackwardWeight: return EventKind::BackwardWeight;
  }
  fail("profile: unknown action kind");
}

EventKind event_kind(StepPhase p) {
  return p == StepPhase::ReduceGrads ? EventKind::ReduceGrads : EventKind::OptimizerStep;
}

StepRecorder::StepRecorder(comm::Communicator& world, int warmup_steps)
    : world_(world), warmup_(warmup_steps) {
  require(warmup_steps >= 1, "--warmup-steps must be at least 1 (the clocks are aligned after it)");
  rec_.rank = world.rank();
}

void StepRecorder::on_step(const StepRecord& r) {
  const std::int64_t step = r.step;
  if (step < warmup_) return;
  if (step == warmup_) {
    t0_ = common_time_origin(world_);
    armed_ = true;
    return;
  }
  const int measured = int(step - warmup_);
  rec_.steps = measured;
  rec_.times += r.times;
  for (const auto& e : r.run->events)
    rec_.actions.push_back({measured, event_kind(e.action.kind), e.action.microbatch,
                            e.begin - t0_, e.end - t0_, e.waited, e.action.chunk});
  for (const PhaseEvent& p : {r.reduce, r.optimizer})
    rec_.actions.push_back({measured, event_kind(p.phase), -1, p.begin - t0_, p.end - t0_, 0.0});
  const double now = steady_seconds() - t0_;
  rec_.step_ends.push_back(now);
  rec_.window_s = now;
}

std::vector<RankRecord> gather_records(comm::Communicator& world, const RankRecord& mine) {
  std::vector<RankRecord> all;
  if (world.rank() != 0) {
    const std::vector<double> v = serialise(mine);
    const std::uint64_t n = v.size();
    world.send(&n, sizeof n, 0, kTagSize);
    world.send(v.data(), v.size() * sizeof(double), 0, kTagData);
    return all;
  }
  all.resize(std::size_t(world.size()));
  all[0] = mine;
  for (int r = 1; r < world.size(); ++r) {
    std::uint64_t n = 0;
    world.recv(&n, sizeof n, r, kTagSize);
    std::vector<double> v(n);
    world.recv(v.data(), v.size() * sizeof(double), r, kTagData);
    all[std::size_t(r)] = deserialise(v);
  }
  return all;
}

}  // namespace wiola::profile
