#pragma once
// Help texts of Boost.Program_options as a person wants to read them.
#include <boost/program_options/options_description.hpp>

namespace wiola {

// Boost writes a double default with 17 significant digits: `--lr` shows
// (=0.00029999999999999997). This gives every double option of `desc` (the
// groups added to it too) the shortest text that reads back as its
// default (`(=3e-4)`, core/text.hpp shortest_real). Call it once after the
// options are declared; values and parsing do not change.
void tidy_real_defaults(boost::program_options::options_description& desc);

}  // namespace wiola
