#pragma once
// Verifies a set of per-stage schedules (pipeline/schedule.hpp) before they
// run: usable from tests, and at start-up in debug builds (every rank can
// build all stages' lists, they are deterministic).
//
// Checks, with `stages[s]` the list of stage s, chunk c of stage s being
// virtual stage c * P + s:
//  (a) per stage: every (micro-batch, chunk) has exactly one Forward and
//      either one Backward or one BackwardInput (B) and one BackwardWeight
//      (W), in the order F, B, W; the receives and sends a virtual stage needs
//      appear exactly once each (none that it must not have), each receive
//      before the compute that waits for it and each send after the compute
//      that produces it.
//  (b) matching: every SendActivation has its RecvActivation on the next
//      virtual stage and every SendGrad its RecvGrad on the previous one, and
//      per (sender, receiver, direction) they are in the same order (FIFO).
//  (c) a simulation of all stages under the executor contract runs to
//      completion: receives and sends are posted without blocking; Forward /
//      Backward run once the peer has posted the matching send; a stage's
//      list ends once every send it posted has a posted receive (the executor
//      waits for its sends before returning).
//  (d) the peak number of micro-batches (x chunks) each stage holds:
//      forwarded and not yet through Backward or W (W still needs the
//      activations).
#include <string>
#include <vector>

#include "pipeline/schedule.hpp"

namespace wiola::pipeline {

struct ScheduleCheck {
  std::vector<std::string> errors;  // empty when the schedules are valid
  std::vector<int> peak_in_flight;  // per stage
  bool ok() const { return errors.empty(); }
  std::string message() const;  // the errors, one per line
};

// `stages[s]` is stage s's list; `chunks` virtual stages per stage.
ScheduleCheck check_schedules(const std::vector<std::vector<Action>>& stages, int microbatches,
                              int chunks = 1);

}  // namespace wiola::pipeline
