#include "core/option_help.hpp"

#include <boost/any.hpp>
#include <boost/program_options/value_semantic.hpp>

#include "core/text.hpp"

namespace po = boost::program_options;

namespace wiola {

namespace {

void retext(const po::option_description& opt) {
  const auto* typed = dynamic_cast<const po::typed_value<double>*>(opt.semantic().get());
  if (!typed) return;
  boost::any value;
  if (!typed->apply_default(value)) return;
  const double v = boost::any_cast<double>(value);
  // The semantic was created non-const by po::value(); options_description
  // only hands it out as const. Its value stays; only its text changes.
  const_cast<po::typed_value<double>*>(typed)->default_value(v, shortest_real(v));
}

}  // namespace

void tidy_real_defaults(po::options_description& desc) {
  for (const auto& opt : desc.options()) retext(*opt);
}

}  // namespace wiola
