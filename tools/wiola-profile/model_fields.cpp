#include "wiola-profile/model_fields.hpp"

#include "core/error.hpp"
#include "core/model_fields.hpp"
#include "model/flops.hpp"

namespace po = boost::program_options;

namespace wiola::profile {

namespace {

// The profiler's spelling of a field: its option key with '_' for '-'
// ("kv-heads" -> "kv_heads"), in profile.json and after "model." in a spec.
std::string json_key(const ModelField& f) {
  std::string k = f.key;
  for (char& ch : k)
    if (ch == '-') ch = '_';
  return k;
}

}  // namespace

Json model_to_json(const ModelConfig& c) {
  Json j = {{"preset", c.preset}};
  for (const ModelField& f : model_fields()) {
    switch (f.kind()) {
      case FieldKind::Int: j[json_key(f)] = f.get_int(c); break;
      case FieldKind::Real: j[json_key(f)] = f.get_real(c); break;
      case FieldKind::Choice: j[json_key(f)] = f.text(c); break;
    }
  }
  j["params"] = param_count(c);
  j["training_flops_per_token"] = training_flops_per_token(c);
  return j;
}

ModelConfig model_from_json(const Json& j) {
  ModelConfig c;
  c.preset = j.at("preset").get<std::string>();
  // Fields a profile.json lacks (written before they were recorded) keep their defaults.
  for (const ModelField& f : model_fields()) {
    const auto it = j.find(json_key(f));
    if (it == j.end()) continue;
    switch (f.kind()) {
      case FieldKind::Int: f.set_int(c, it->get<int>()); break;
      case FieldKind::Real: f.set_real(c, it->get<double>()); break;
      case FieldKind::Choice: f.set_choice(c, it->get<std::string>()); break;
    }
  }
  return c;
}

void add_model_keys(po::options_description& keys) {
  keys.add_options()("model.preset", po::value<std::string>(), "a preset name");
  for (const ModelField& f : model_fields()) {
    const std::string key = "model." + json_key(f);
    if (f.kind() == FieldKind::Int)
      keys.add_options()(key.c_str(), po::value<int>(), f.help);
    else if (f.kind() == FieldKind::Real)
      keys.add_options()(key.c_str(), po::value<double>(), f.help);
    else
      keys.add_options()(key.c_str(), po::value<std::string>(), f.help);
  }
}

ModelConfig model_from_spec(const SpecValues& spec) {
  const std::string name = spec.text("model.preset", "");
  require(!name.empty(), "projection: set model.preset (e.g. wiola-1.5b)");
  ModelConfig c = preset(name);
  for (const ModelField& f : model_fields()) {
    const std::string key = "model." + json_key(f);
    if (!spec.has(key)) continue;
    switch (f.kind()) {
      case FieldKind::Int: f.set_int(c, spec.integer(key, f.get_int(c))); break;
      case FieldKind::Real: f.set_real(c, spec.number(key, f.get_real(c))); break;
      case FieldKind::Choice: f.set_choice(c, spec.text(key, f.text(c))); break;
    }
  }
  c.validate();
  return c;
}

void put_model_defaults(const ModelConfig& c, po::variables_map& vm) {
  put_spec_default(vm, "model.preset", c.preset);
  for (const ModelField& f : model_fields()) {
    const std::string key = "model." + json_key(f);
    switch (f.kind()) {
      case FieldKind::Int: put_spec_default(vm, key, f.get_int(c)); break;
      case FieldKind::Real: put_spec_default(vm, key, f.get_real(c)); break;
      case FieldKind::Choice: put_spec_default(vm, key, f.text(c)); break;
    }
  }
}

}  // namespace wiola::profile
