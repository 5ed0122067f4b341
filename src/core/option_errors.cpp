#include "core/option_errors.hpp"

#include <algorithm>
#include <boost/program_options/errors.hpp>
#include <map>

namespace po = boost::program_options;

namespace wiola {

namespace {

// Boost keeps the substituted values in a protected map and offers no way to
// read them back; a member pointer named through a derived class reaches it.
struct SubstitutionsOf : po::error_with_option_name {
  using Map = std::map<std::string, std::string>;
  static Map& of(po::error_with_option_name& e) { return e.*(&SubstitutionsOf::m_substitutions); }
};

// A byte that cannot start a placeholder, standing in for '%' inside values.
constexpr char kPercent = '\x1f';

}  // namespace

std::string error_text(const std::exception& e) {
  const auto* named = dynamic_cast<const po::error_with_option_name*>(&e);
  if (named == nullptr) return e.what();
  // The exception object itself is not const (it was thrown); what() rebuilds
  // its message from the map on every call.
  auto& subs = SubstitutionsOf::of(const_cast<po::error_with_option_name&>(*named));
  for (auto& entry : subs) std::replace(entry.second.begin(), entry.second.end(), '%', kPercent);
  std::string text = named->what();
  std::replace(text.begin(), text.end(), kPercent, '%');
  return text;
}

}  // namespace wiola
