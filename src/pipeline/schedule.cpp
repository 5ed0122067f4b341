#include "pipeline/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

#include "core/error.hpp"

namespace wiola::pipeline {

namespace {

struct KindName {
  ScheduleKind kind;
  std::string_view name;
};
constexpr KindName kKindNames[] = {
    {ScheduleKind::GPipe, "gpipe"},       {ScheduleKind::OneFOneB, "1f1b"},
    {ScheduleKind::Interleaved, "interleaved"}, {ScheduleKind::ZbH1, "zb-h1"},
    {ScheduleKind::ZbH2, "zb-h2"},
};

}  // namespace

bool is_compute(ActionKind k) {
  return k == ActionKind::Forward || k == ActionKind::Backward ||
         k == ActionKind::BackwardInput || k == ActionKind::BackwardWeight;
}
bool takes_output_grad(ActionKind k) {
  return k == ActionKind::Backward || k == ActionKind::BackwardInput;
}
bool completes_backward(ActionKind k) {
  return k == ActionKind::Backward || k == ActionKind::BackwardWeight;
}

std::string_view schedule_kind_name(ScheduleKind k) {
  for (const auto& n : kKindNames)
    if (n.kind == k) return n.name;
  return "?";
}

ScheduleKind parse_schedule_kind(std::string_view s) {
  if (s == "GPipe") return ScheduleKind::GPipe;
  if (s == "1F1B") return ScheduleKind::OneFOneB;
  for (const auto& n : kKindNames)
    if (n.name == s) return n.kind;
  fail("pipeline schedule '", s, "' is unknown (expected gpipe, 1f1b, interleaved, zb-h1 or zb-h2)");
}

bool splits_backward(ScheduleKind k) { return k == ScheduleKind::ZbH1 || k == ScheduleKind::ZbH2; }

void check_schedule_shape(ScheduleKind kind, int stages, int microbatches, int chunks) {
  require(stages >= 1, "pipeline: the number of stages must be at least 1, got ", stages);
  require(microbatches >= 1, "pipeline: the number of micro-batches must be at least 1, got ",
          microbatches);
  require(chunks >= 1, "--virtual-stages must be at least 1, got ", chunks);
  if (kind != ScheduleKind::Interleaved) {
    require(chunks == 1, "--virtual-stages ", chunks, " needs --schedule interleaved (the ",
            schedule_kind_name(kind), " schedule runs one chunk per stage)");
    return;
  }
  require(chunks >= 2, "--schedule interleaved needs --virtual-stages of at least 2, got ",
          chunks);
  require(stages >= 2, "--schedule interleaved needs at least two pipeline stages (--pp), got ",
          stages);
  require(microbatches % stages == 0, "--schedule interleaved needs the micro-batches per replica (",
          microbatches, ") to be a multiple of the pipeline stages (", stages, ")");
}

namespace {

void check_stage(int stages, int stage) {
  require(stage >= 0 && stage < stages, "pipeline: stage ", stage, " is out of range for ", stages,
          " stages");
}

// Interleaved order (Megatron-LM): micro-batches go through the chunks in
// groups of P; forward k runs chunk (k mod P v) / P of micro-batch
// (k / P v) P + k mod P, and backward k the same micro-batch in reverse
// chunk order.
Action interleaved_action(ActionKind kind, int k, int P, int v) {
  const int group = k / (P * v), in_group = k % (P * v);
  int chunk = in_group / P;
  if (kind != ActionKind::Forward) chunk = v - 1 - chunk;
  return {kind, group * P + in_group % P, chunk};
}

// The 1F1B shape over `total` forwards: `warm` forwards, then one forward and
// the oldest backward in turn, then the remaining backwards.
template <class Fwd, class Bwd>
void one_forward_one_backward(int warm, int total, Fwd fwd, Bwd bwd) {
  for (int k = 0; k < warm; ++k) fwd(k);
  for (int i = 0; i < total - warm; ++i) {
    fwd(warm + i);
    bwd(i);
  }
  for (int k = total - warm; k < total; ++k) bwd(k);
}

// ZB-H2: the order a greedy run of all stages takes with F, B and W of unit
// cost and free transfers. A free stage runs, in this priority, the next B
// whose gradient has arrived (the critical path upstream), the next F whose
// input has arrived while it holds fewer than 2 (P - s) - 1 micro-batches,
// the oldest pending W; else it waits. The warm-up then fills with forwards
// and the W's fill what would otherwise be the bubble, at up to 2P - 1
// micro-batches held (on stage 0). F, B and W each go in micro-batch order.
std::vector<Action> zb_h2_order(int P, int stage, int m) {
  struct Stage {
    int next_f = 0, next_b = 0, next_w = 0;
    long busy_until = 0;
    std::vector<Action> order;
  };
  std::vector<Stage> st(static_cast<std::size_t>(P));
  // Tick at which stage s finished F / B of micro-batch mb (-1: not yet).
  std::vector<long> f_done(std::size_t(P) * m, -1), b_done(std::size_t(P) * m, -1);
  auto at = [m](std::vector<long>& v, int s, int mb) -> long& { return v[std::size_t(s) * m + mb]; };
  auto arrived = [](long done, long t) { return done >= 0 && done <= t; };
  for (long t = 0;; ++t) {
    bool all_done = true;
    for (int s = 0; s < P; ++s) {
      Stage& x = st[std::size_t(s)];
      if (x.next_w < m) all_done = false;
      if (x.busy_until > t) continue;
      const int limit = std::min(2 * P - 1, m);
      if (x.next_b < x.next_f && (s == P - 1 || arrived(at(b_done, s + 1, x.next_b), t))) {
        x.order.push_back({ActionKind::BackwardInput, x.next_b, 0});
        at(b_done, s, x.next_b++) = t + 1;
      } else if (x.next_f < m && x.next_f - x.next_w < limit &&
                 (s == 0 || arrived(at(f_done, s - 1, x.next_f), t))) {
        x.order.push_back({ActionKind::Forward, x.next_f, 0});
        at(f_done, s, x.next_f++) = t + 1;
      } else if (x.next_w < x.next_b) {
        x.order.push_back({ActionKind::BackwardWeight, x.next_w++, 0});
      } else {
        continue;
      }
      x.busy_until = t + 1;
    }
    if (all_done) break;
  }
  return std::move(st[std::size_t(stage)].order);
}

// The order of this stage's compute actions.
std::vector<Action> compute_order(ScheduleKind kind, int P, int s, int m, int v) {
  std::vector<Action> order;
  const int warm = warmup_forwards(kind, P, s, m, v);
  if (kind == ScheduleKind::Interleaved) {
    const int total = m * v;
    auto fwd = [&](int k) { order.push_back(interleaved_action(ActionKind::Forward, k, P, v)); };
    auto bwd = [&](int k) { order.push_back(interleaved_action(ActionKind::Backward, k, P, v)); };
    one_forward_one_backward(warm, total, fwd, bwd);
    return order;
  }
  if (kind == ScheduleKind::ZbH2) return zb_h2_order(P, s, m);
  if (kind == ScheduleKind::ZbH1) {
    // 1F1B's order with each backward split; stage s defers W by s
    // micro-batches (it then holds P, 1F1B's peak on stage 0) and spends them
    // in its cool-down, where 1F1B idles.
    std::deque<int> pending_w;
    auto fwd = [&](int mb) { order.push_back({ActionKind::Forward, mb, 0}); };
    auto bwd = [&](int mb) {
      order.push_back({ActionKind::BackwardInput, mb, 0});
      pending_w.push_back(mb);
      while (static_cast<int>(pending_w.size()) > s) {
        order.push_back({ActionKind::BackwardWeight, pending_w.front(), 0});
        pending_w.pop_front();
      }
    };
    one_forward_one_backward(warm, m, fwd, bwd);
    for (int mb : pending_w) order.push_back({ActionKind::BackwardWeight, mb, 0});
    return order;
  }
  auto fwd = [&](int mb) { order.push_back({ActionKind::Forward, mb, 0}); };
  auto bwd = [&](int mb) { order.push_back({ActionKind::Backward, mb, 0}); };
  // Steady state (1F1B): each new forward is followed by the oldest backward,
  // so at most warm + 1 = P - s micro-batches are held. GPipe has none.
  one_forward_one_backward(warm, m, fwd, bwd);
  return order;
}

}  // namespace

int warmup_forwards(ScheduleKind kind, int stages, int stage, int microbatches, int chunks) {
  check_schedule_shape(kind, stages, microbatches, chunks);
  check_stage(stages, stage);
  const int P = stages, s = stage, m = microbatches, v = chunks;
  switch (kind) {
    case ScheduleKind::GPipe: return m;
    case ScheduleKind::OneFOneB:
    case ScheduleKind::ZbH1: return std::min(P - s - 1, m);
    case ScheduleKind::ZbH2: return std::min(2 * (P - s - 1), m);
    case ScheduleKind::Interleaved: return std::min(2 * (P - s - 1) + (v - 1) * P, m * v);
  }
  return m;
}

std::vector<Action> make_schedule(ScheduleKind kind, int stages, int stage, int microbatches,
                                  int chunks) {
  check_schedule_shape(kind, stages, microbatches, chunks);
  check_stage(stages, stage);
  const std::vector<Action> order = compute_order(kind, stages, stage, microbatches, chunks);
  const int last_virtual = stages * chunks - 1;
  auto virt = [&](const Action& a) { return a.chunk * stages + stage; };
  // The receive a compute action waits for, and the send that follows it.
  auto recv_for = [&](const Action& a) -> std::optional<Action> {
    if (a.kind == ActionKind::Forward && virt(a) != 0)
      return Action{ActionKind::RecvActivation, a.microbatch, a.chunk};
    if (takes_output_grad(a.kind) && virt(a) != last_virtual)
      return Action{ActionKind::RecvGrad, a.microbatch, a.chunk};
    return std::nullopt;
  };
  auto send_for = [&](const Action& a) -> std::optional<Action> {
    if (a.kind == ActionKind::Forward && virt(a) != last_virtual)
      return Action{ActionKind::SendActivation, a.microbatch, a.chunk};
    if (takes_output_grad(a.kind) && virt(a) != 0)
      return Action{ActionKind::SendGrad, a.microbatch, a.chunk};
    return std::nullopt;
  };
  // Receives are posted in compute order, each before the compute that
  // waits for it: the next compute's receive is posted before the current
  // one runs, so its transfer overlaps that compute (one action of
  // look-ahead, not counting W actions, which receive nothing).
  std::vector<std::optional<Action>> recvs;
  for (const Action& a : order) recvs.push_back(recv_for(a));
  std::vector<Action> out;
  std::size_t next_recv = 0;  // the first receive not yet posted
  auto post_through = [&](std::size_t k) {
    for (; next_recv <= k && next_recv < order.size(); ++next_recv)
      if (recvs[next_recv]) out.push_back(*recvs[next_recv]);
  };
  for (std::size_t k = 0; k < order.size(); ++k) {
    post_through(k);
    std::size_t ahead = k + 1;
    while (ahead < order.size() && order[ahead].kind == ActionKind::BackwardWeight) ++ahead;
    post_through(ahead);
    out.push_back(order[k]);
    if (auto s = send_for(order[k])) out.push_back(*s);
  }
  return out;
}

std::vector<std::vector<Action>> make_schedules(ScheduleKind kind, int stages, int microbatches,
                                                int chunks) {
  check_schedule_shape(kind, stages, microbatches, chunks);
  std::vector<std::vector<Action>> all;
  for (int s = 0; s < stages; ++s)
    all.push_back(make_schedule(kind, stages, s, microbatches, chunks));
  return all;
}

std::vector<Action> make_forward_schedule(int stages, int stage, int microbatches, int chunks) {
  require(stages >= 1 && microbatches >= 1 && chunks >= 1,
          "pipeline: a forward schedule needs at least one stage, micro-batch and chunk");
  check_stage(stages, stage);
  const int last_virtual = stages * chunks - 1;
  std::vector<Action> a;
  for (int mb = 0; mb < microbatches; ++mb)
    for (int c = 0; c < chunks; ++c) {
      const int v = c * stages + stage;
      if (v > 0) a.push_back({ActionKind::RecvActivation, mb, c});
      a.push_back({ActionKind::Forward, mb, c});
      if (v < last_virtual) a.push_back({ActionKind::SendActivation, mb, c});
    }
  return a;
}

int peak_in_flight(std::span<const Action> actions) {
  int held = 0, most = 0;
  for (const Action& a : actions) {
    if (a.kind == ActionKind::Forward) most = std::max(most, ++held);
    if (completes_backward(a.kind)) --held;
  }
  return most;
}

double theoretical_bubble(ScheduleKind kind, int stages, int microbatches, int chunks) {
  check_schedule_shape(kind, stages, microbatches, chunks);
  const double P = stages, m = microbatches, v = chunks;
  switch (kind) {
    case ScheduleKind::GPipe:
    case ScheduleKind::OneFOneB: return (P - 1) / (m + P - 1);
    case ScheduleKind::Interleaved: return (P - 1) / (v * m + P - 1);
    case ScheduleKind::ZbH1:
    case ScheduleKind::ZbH2: return (P - 1) / (3 * m + P - 1);
  }
  return 0;
}

std::optional<std::string> bubble_warning(int stages, int microbatches, ScheduleKind kind,
                                          int chunks) {
  check_schedule_shape(kind, stages, microbatches, chunks);
  if (stages == 1) return std::nullopt;
  const double bubble = theoretical_bubble(kind, stages, microbatches, chunks);
  const long pct = std::lround(100 * bubble);
  if (microbatches < stages)
    return detail::concat("only ", microbatches, " micro-batch", microbatches == 1 ? "" : "es",
                          " for ", stages, " pipeline stages: the pipeline never fills and ",
                          "stages idle ", pct, "% of the step; use at least ", 4 * stages,
                          " micro-batches (4 x stages)");
  if (bubble > 0.25)
    return detail::concat(microbatches, " micro-batches for ", stages, " pipeline stages leave ",
                          schedule_kind_name(kind), " a bubble of ", pct, "% of the step; ",
                          4 * stages, " or more micro-batches (4 x stages) keep it under 20%");
  return std::nullopt;
}

}  // namespace wiola::pipeline
