#pragma once
// The model's fields (core/model_fields.hpp) as Boost.Program_options
// entries: one option per field, named by its key, described by its help.
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

#include "core/model_config.hpp"

namespace wiola {

// Adds `--d`, `--layers`, ... `--init-std` (no defaults: a field left out keeps
// the preset's value).
void add_model_options(boost::program_options::options_description& group);

// Sets the fields given in `vm` on `c` (the preset); throws wiola::Error for an
// unknown choice name ("--atm on").
void apply_model_options(const boost::program_options::variables_map& vm, ModelConfig& c);

}  // namespace wiola
