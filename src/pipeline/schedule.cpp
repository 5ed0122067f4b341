#include "pipeline/schedule.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace wiola::pipeline {

std::string_view schedule_kind_name(ScheduleKind k) {
  return k == ScheduleKind::GPipe ? "gpipe" : "1f1b";
}

ScheduleKind parse_schedule_kind(std::string_view s) {
  if (s == "gpipe" || s == "GPipe") return ScheduleKind::GPipe;
  if (s == "1f1b" || s == "1F1B") return ScheduleKind::OneFOneB;
  fail("pipeline schedule '", s, "' is unknown (expected gpipe or 1f1b)");
}

namespace {

void check_shape(int stages, int microbatches) {
  require(stages >= 1, "pipeline: the number of stages must be at least 1, got ", stages);
  require(microbatches >= 1, "pipeline: the number of micro-batches must be at least 1, got ",
          microbatches);
}

// The order of this stage's Forward / Backward actions.
std::vector<Action> compute_order(ScheduleKind kind, int stages, int stage, int m) {
  std::vector<Action> order;
  auto fwd = [&](int mb) { order.push_back({ActionKind::Forward, mb}); };
  auto bwd = [&](int mb) { order.push_back({ActionKind::Backward, mb}); };
  const int warm = warmup_forwards(kind, stages, stage, m);
  for (int mb = 0; mb < warm; ++mb) fwd(mb);
  // Steady state (1F1B): each new forward is followed by the oldest backward,
  // so at most warm + 1 = P - s micro-batches are held. GPipe has none.
  for (int i = 0; i < m - warm; ++i) {
    fwd(warm + i);
    bwd(i);
  }
  for (int mb = m - warm; mb < m; ++mb) bwd(mb);
  return order;
}

}  // namespace

int warmup_forwards(ScheduleKind kind, int stages, int stage, int microbatches) {
  check_shape(stages, microbatches);
  require(stage >= 0 && stage < stages, "pipeline: stage ", stage, " is out of range for ", stages,
          " stages");
  if (kind == ScheduleKind::GPipe) return microbatches;
  return std::min(stages - stage - 1, microbatches);
}

std::vector<Action> make_schedule(ScheduleKind kind, int stages, int stage, int microbatches) {
  const std::vector<Action> order = compute_order(kind, stages, stage, microbatches);
  const bool first = stage == 0, last = stage == stages - 1;
  // The receive a compute action waits for, and the send that follows it.
  auto recv_for = [&](const Action& a) -> std::optional<Action> {
    if (a.kind == ActionKind::Forward && !first)
      return Action{ActionKind::RecvActivation, a.microbatch};
    if (a.kind == ActionKind::Backward && !last) return Action{ActionKind::RecvGrad, a.microbatch};
    return std::nullopt;
  };
  auto send_for = [&](const Action& a) -> std::optional<Action> {
    if (a.kind == ActionKind::Forward && !last)
      return Action{ActionKind::SendActivation, a.microbatch};
    if (a.kind == ActionKind::Backward && !first) return Action{ActionKind::SendGrad, a.microbatch};
    return std::nullopt;
  };
  std::vector<Action> out;
  if (auto r = recv_for(order.front())) out.push_back(*r);
  for (std::size_t k = 0; k < order.size(); ++k) {
    // Post the next compute action's receive before this one runs, so the
    // transfer overlaps this compute (one action of look-ahead).
    if (k + 1 < order.size())
      if (auto r = recv_for(order[k + 1])) out.push_back(*r);
    out.push_back(order[k]);
    if (auto s = send_for(order[k])) out.push_back(*s);
  }
  return out;
}

std::vector<std::vector<Action>> make_schedules(ScheduleKind kind, int stages, int microbatches) {
  check_shape(stages, microbatches);
  std::vector<std::vector<Action>> all;
  for (int s = 0; s < stages; ++s) all.push_back(make_schedule(kind, stages, s, microbatches));
  return all;
}

std::vector<Action> make_forward_schedule(int stages, int stage, int microbatches) {
  check_shape(stages, microbatches);
  require(stage >= 0 && stage < stages, "pipeline: stage ", stage, " is out of range for ", stages,
          " stages");
  std::vector<Action> a;
  for (int mb = 0; mb < microbatches; ++mb) {
    if (stage > 0) a.push_back({ActionKind::RecvActivation, mb, 0});
    a.push_back({ActionKind::Forward, mb, 0});
    if (stage < stages - 1) a.push_back({ActionKind::SendActivation, mb, 0});
  }
  return a;
}

double theoretical_bubble(ScheduleKind kind, int stages, int microbatches) {
  check_shape(stages, microbatches);
  (void)kind;  // the same for GPipe and 1F1B
  return double(stages - 1) / double(microbatches + stages - 1);
}

std::optional<std::string> bubble_warning(int stages, int microbatches) {
  check_shape(stages, microbatches);
  if (stages == 1) return std::nullopt;
  const double bubble = theoretical_bubble(ScheduleKind::OneFOneB, stages, microbatches);
  const long pct = std::lround(100 * bubble);
  if (microbatches < stages)
    return detail::concat("only ", microbatches, " micro-batch", microbatches == 1 ? "" : "es",
                          " for ", stages, " pipeline stages: the pipeline never fills and ",
                          "stages idle ", pct, "% of the step; use at least ", 4 * stages,
                          " micro-batches (4 x stages)");
  if (bubble > 0.25)
    return detail::concat(microbatches, " micro-batches for ", stages,
                          " pipeline stages leave a bubble of ", pct, "% of the step; ", 4 * stages,
                          " or more micro-batches (4 x stages) keep it under 20%");
  return std::nullopt;
}

}  // namespace wiola::pipeline
