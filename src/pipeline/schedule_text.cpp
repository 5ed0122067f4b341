// Text form of actions and schedules, for logs, debugging and tests.
#include <cctype>
#include <charconv>

#include "core/error.hpp"
#include "pipeline/schedule.hpp"

namespace wiola::pipeline {

namespace {

struct Code {
  ActionKind kind;
  std::string_view text;
};
// Two-letter codes first so "BI3" is not read as "B" followed by "I3".
constexpr Code kCodes[] = {
    {ActionKind::RecvActivation, "RA"}, {ActionKind::SendActivation, "SA"},
    {ActionKind::RecvGrad, "RG"},       {ActionKind::SendGrad, "SG"},
    {ActionKind::BackwardInput, "BI"},  {ActionKind::Forward, "F"},
    {ActionKind::Backward, "B"},        {ActionKind::BackwardWeight, "W"},
};

std::string_view code(ActionKind k) {
  for (const auto& c : kCodes)
    if (c.kind == k) return c.text;
  return "?";
}

bool parse_int(std::string_view s, int& v) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size() && v >= 0;
}

}  // namespace

std::string to_string(const Action& a) {
  std::string s(code(a.kind));
  s += std::to_string(a.microbatch);
  if (a.chunk != 0) {
    s += '@';  // appended piecewise: `"@" + std::string` trips a GCC 12 -Wrestrict false positive
    s += std::to_string(a.chunk);
  }
  return s;
}

std::string to_string(std::span<const Action> actions) {
  std::string s;
  for (const auto& a : actions) {
    if (!s.empty()) s += ' ';
    s += to_string(a);
  }
  return s;
}

Action parse_action(std::string_view s) {
  for (const auto& c : kCodes) {
    if (s.substr(0, c.text.size()) != c.text) continue;
    std::string_view rest = s.substr(c.text.size());
    Action a{c.kind, -1, 0};
    const auto at = rest.find('@');
    const std::string_view mb = rest.substr(0, at);
    if (at != std::string_view::npos)
      require(parse_int(rest.substr(at + 1), a.chunk), "schedule action '", s,
              "': bad chunk after '@'");
    require(parse_int(mb, a.microbatch), "schedule action '", s,
            "': expected a micro-batch number after '", c.text, "'");
    return a;
  }
  fail("schedule action '", s, "' is unknown (expected RA, F, SA, RG, B, BI, W or SG)");
}

std::vector<Action> parse_actions(std::string_view s) {
  std::vector<Action> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.push_back(parse_action(s.substr(i, j - i)));
    i = j;
  }
  return out;
}

std::string format_schedules(const std::vector<std::vector<Action>>& stages) {
  std::string s;
  for (std::size_t k = 0; k < stages.size(); ++k)
    s += "stage " + std::to_string(k) + ": " + to_string(stages[k]) + "\n";
  return s;
}

}  // namespace wiola::pipeline
