#pragma once
// Writes wiola-profile's files into --out DIR (created when missing).
#include <string>
#include <vector>

#include "profile/profile_run.hpp"
#include "wiola-profile/projection.hpp"
#include "wiola-profile/sweep.hpp"

namespace wiola::profile {

// profile.csv, profile.json and (with_trace) trace.json. Returns the paths written.
std::vector<std::string> write_profile_outputs(const std::string& dir, const ProfileResult& r,
                                               bool with_trace);
// sweep.csv.
std::vector<std::string> write_sweep_outputs(const std::string& dir,
                                             const std::vector<SweepRow>& rows);
// projection.json and (with_trace) projected-trace.json: the simulated step's timeline.
std::vector<std::string> write_projection_outputs(const std::string& dir, const Projection& p,
                                                  bool with_trace);

}  // namespace wiola::profile
