#pragma once
#include <string>

#include "core/model_config.hpp"

namespace wiola {
// A table of the exact parameter count per component and in total (what
// `wiola-train --print-params` prints and docs/models.md quotes).
std::string describe_param_counts(const ModelConfig& c);
}  // namespace wiola
