#pragma once
// Checks a wiola-profile trace.json / profile.json (or a simulated trace)
// against the layout it claims: a track per rank, every micro-batch's Forward
// and Backward on every rank in every measured step, in the schedule's order,
// the transfers and the step's reduction and optimizer, timestamps monotone
// per track, every flow arrow closed. Returns the problems found (empty: fine).
#include <string>
#include <vector>

#include "pipeline/schedule.hpp"
#include "wiola-profile/files.hpp"

namespace wiola::profile::testing {

struct ExpectedRun {
  int pp = 1, dp = 1, steps = 1, microbatches = 1;
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::OneFOneB;
  int chunks = 1;
};

std::vector<std::string> check_trace(const Json& trace, const ExpectedRun& run);
// profile.json: the layout, positive throughput, and per rank a time split
// whose parts are non-negative and do not exceed the step.
std::vector<std::string> check_profile_json(const Json& profile, const ExpectedRun& run);

}  // namespace wiola::profile::testing
