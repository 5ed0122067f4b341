#pragma once
// The model's fields as the profiler spells them: the "model" object of
// profile.json and projection.json, and the [model] section of a projection
// spec, all from the one table of ModelConfig fields (core/model_fields.hpp):
// a field's option key with '_' for '-' ("kv_heads").
#include <boost/program_options.hpp>

#include "core/model_config.hpp"
#include "wiola-profile/files.hpp"
#include "wiola-profile/spec_file.hpp"

namespace wiola::profile {

// The fields, plus the exact parameter count and the training FLOPs per token.
Json model_to_json(const ModelConfig& c);
// The fields model_to_json writes; the others keep ModelConfig's defaults.
ModelConfig model_from_json(const Json& j);

// The [model] keys: model.preset and the fields that override the preset's.
void add_model_keys(boost::program_options::options_description& keys);
// The preset named by model.preset with the fields given overriding it; validated.
ModelConfig model_from_spec(const SpecValues& spec);
// Every field (and the preset's name) as spec defaults: a profile's model.
void put_model_defaults(const ModelConfig& c, boost::program_options::variables_map& vm);

}  // namespace wiola::profile
