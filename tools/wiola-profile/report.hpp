#pragma once
// Everything wiola-profile prints or writes: the human-readable tables
// (profile, sweep, projection), profile.csv, profile.json, sweep.csv and
// projection.json. Formats are described in docs/profiling.md.
#include <string>
#include <vector>

#include "profile/metrics.hpp"
#include "profile/profile_run.hpp"
#include "wiola-profile/files.hpp"
#include "wiola-profile/projection.hpp"
#include "wiola-profile/sweep.hpp"

namespace wiola::profile {

// "850 ms", "3.4 h", "12.6 days".
std::string human_duration(double seconds);
// "64.0 KiB", "1.50 GiB".
std::string human_bytes(double bytes);

// Per stage and overall: the step's time split (ms), bubble beside theory,
// tokens/s, GFLOP/s, MFU, compute-only MFU and (with_memory) peak RSS.
std::string format_split_table(const RunLayout& layout, const Metrics& m, bool with_memory);

// The whole stdout report of a profile. `budget_tokens` > 0 adds the time to
// train that many tokens at the measured rate (`budget_name` says where it came from).
std::string format_profile(const ProfileResult& r, double budget_tokens,
                           const std::string& budget_name);
std::string profile_csv(const ProfileResult& r);
Json profile_json(const ProfileResult& r);

// Sorted by tokens/s (refused points last).
std::string format_sweep(std::vector<SweepRow> rows);
std::string sweep_csv(std::vector<SweepRow> rows);

std::string format_projection(const Projection& p);
Json projection_json(const Projection& p);

}  // namespace wiola::profile
