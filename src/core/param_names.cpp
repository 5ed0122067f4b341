#include "core/param_names.hpp"

namespace wiola::param_names {

namespace {

constexpr std::string_view kLayerPrefix = "layers.";

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

}  // namespace

std::string layer_param(int layer, std::string_view role) {
  std::string name(kLayerPrefix);
  name += std::to_string(layer);
  name += '.';
  name += role;
  return name;
}

std::string_view layer_role(std::string_view name) {
  if (name.substr(0, kLayerPrefix.size()) != kLayerPrefix) return {};
  const auto dot = name.find('.', kLayerPrefix.size());
  return dot == std::string_view::npos ? std::string_view{} : name.substr(dot + 1);
}

bool is_vector_param(std::string_view name) {
  return ends_with(name, ".gamma") || ends_with(name, ".delta") || ends_with(name, ".ctx_logit") ||
         ends_with(name, ".bias");
}

}  // namespace wiola::param_names
