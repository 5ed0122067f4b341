#pragma once
// The model configuration in files, through the one field table
// (core/model_fields.hpp): the architecture fields under their file keys, as
// root attributes of an HDF5 file (weights files) and as members of a JSON
// object (config.json). The keys are those files have always used, so files
// written before the table still load.
#include <nlohmann/json_fwd.hpp>

#include "core/model_config.hpp"

namespace wiola {

namespace h5 {
class File;
}

// The stored fields of c's family (core/model_fields.hpp), `arch` among them:
// integers as int attributes, reals as double attributes, choices by name.
void write_model_attrs(h5::File& f, const ModelConfig& c);
// The fields write_model_attrs writes (the rest keep their defaults): `arch`
// first (absent: the main family, as in files written before the second
// family existed), then that family's fields; preset "file". Throws naming
// the file and the attribute; does not validate.
ModelConfig read_model_attrs(const h5::File& f);

// The same fields as JSON members, each once: under its Hugging Face name
// where the table has one (hidden_size, num_hidden_layers, rope_theta, ...),
// else under its file key (k_s, tau, summary, ...).
void write_model_json(nlohmann::json& j, const ModelConfig& c);
// Reads `arch` (absent: the main family), then that family's fields, each
// under its Hugging Face name or, failing that, its file key, so config.json
// files of either spelling load; preset "safetensors". Throws wiola::Error
// naming a missing field, nlohmann::json exceptions for mistyped members,
// wiola::Error for an unknown choice; does not validate.
ModelConfig read_model_json(const nlohmann::json& j);

}  // namespace wiola
