#pragma once
// The projection spec's keys and values (docs/profiling.md, "The spec file").
// Boost.Program_options reads the INI text: `[section]` then `key = value` is
// the option `section.key`, declared below with its type, so a key that is
// not declared is an error naming it. A profile.json supplies defaults in
// place of a file; --project-set section.key=value wins over both.
#include <boost/program_options.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "wiola-profile/measured_profile.hpp"

namespace wiola::profile {

// The spec's units: GB/s are 1e9 bytes per second, latencies microseconds.
constexpr double kSpecGB = 1e9, kSpecUs = 1e-6;

// Every key a projection reads.
const boost::program_options::options_description& spec_keys();

// The INI comment rule: a `#` or `;` and the rest of its line are a comment,
// whether it starts the line or follows a value ("pp = 4  ; four stages").
// (To be unified with src/core's INI comment helper.)
std::string strip_ini_comment(std::string_view line);

// The spec from INI text (`origin` names it in errors, with the line), or from
// the defaults a profile supplies (`origin` names the profile), with
// `assignments` ("section.key=value"; the later of two for one key wins) on
// top. Throws wiola::Error for an unknown key or a malformed value.
boost::program_options::variables_map spec_from_ini(const std::string& text,
                                                    const std::string& origin,
                                                    const std::vector<std::string>& assignments);
boost::program_options::variables_map spec_from_profile(
    const MeasuredProfile& profile, const std::string& origin,
    const std::vector<std::string>& assignments);

// Sets `key` to `value` (of the key's declared type) as a default, which any
// value given for the key replaces.
template <class T>
void put_spec_default(boost::program_options::variables_map& vm, const std::string& key, T value) {
  vm.emplace(key, boost::program_options::variable_value(boost::any(std::move(value)), true));
}

// Typed access to a spec's values (the types are spec_keys()'), remembering
// what was read so that keys given but never used (superseded by another key,
// or meant for another source of times) can be listed.
class SpecValues {
 public:
  explicit SpecValues(const boost::program_options::variables_map& vm) : vm_(vm) {}
  bool has(const std::string& key) const;  // does not count as reading it
  std::string text(const std::string& key, const std::string& fallback) const;
  double number(const std::string& key, double fallback) const;
  int integer(const std::string& key, int fallback) const;
  std::vector<double> numbers(const std::string& key) const;  // empty when absent
  // Keys given (by a file or --project-set, not a profile's defaults) never read.
  std::vector<std::string> unused() const;

 private:
  const boost::program_options::variable_value* find(const std::string& key) const;
  const boost::program_options::variables_map& vm_;
  mutable std::set<std::string> read_;
};

}  // namespace wiola::profile
