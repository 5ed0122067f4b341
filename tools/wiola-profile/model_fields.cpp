#include "wiola-profile/model_fields.hpp"

#include "core/error.hpp"
#include "model/flops.hpp"

namespace po = boost::program_options;

namespace wiola::profile {

Json model_to_json(const ModelConfig& c) {
  return {{"preset", c.preset},
          {"d", c.d},
          {"layers", c.L},
          {"heads", c.H},
          {"kv_heads", c.Hkv},
          {"dsff_a", c.dA},
          {"dsff_b", c.dB},
          {"vocab", c.V},
          {"seq_len", c.T},
          {"lambda", c.Lambda},
          {"summary", summary_mode_name(c.summary)},
          {"atm", atm_mode_name(c.atm)},
          {"params", param_count(c)},
          {"training_flops_per_token", training_flops_per_token(c)}};
}

ModelConfig model_from_json(const Json& j) {
  ModelConfig c;
  c.preset = j.at("preset").get<std::string>();
  c.d = j.at("d").get<int>();
  c.L = j.at("layers").get<int>();
  c.H = j.at("heads").get<int>();
  c.Hkv = j.at("kv_heads").get<int>();
  c.dA = j.at("dsff_a").get<int>();
  c.dB = j.at("dsff_b").get<int>();
  c.V = j.at("vocab").get<int>();
  c.T = j.at("seq_len").get<int>();
  c.Lambda = j.at("lambda").get<int>();
  c.summary = parse_summary_mode(j.at("summary").get<std::string>());
  c.atm = parse_atm_mode(j.at("atm").get<std::string>());
  return c;
}

void add_model_keys(po::options_description& keys) {
  keys.add_options()
      ("model.preset", po::value<std::string>(), "a preset name")
      ("model.d", po::value<int>(), "hidden width")
      ("model.layers", po::value<int>(), "layers")
      ("model.heads", po::value<int>(), "query heads")
      ("model.kv_heads", po::value<int>(), "key/value heads")
      ("model.dsff_a", po::value<int>(), "DSFF narrow width")
      ("model.dsff_b", po::value<int>(), "DSFF wide width")
      ("model.vocab", po::value<int>(), "vocabulary")
      ("model.seq_len", po::value<int>(), "context length")
      ("model.lambda", po::value<int>(), "GCLA lookback")
      ("model.summary", po::value<std::string>(), "causal or sequence");
}

ModelConfig model_from_spec(const SpecValues& spec) {
  const std::string name = spec.text("model.preset", "");
  require(!name.empty(), "projection: set model.preset (e.g. wiola-1.5b)");
  ModelConfig c = preset(name);
  c.d = spec.integer("model.d", c.d);
  c.L = spec.integer("model.layers", c.L);
  c.H = spec.integer("model.heads", c.H);
  c.Hkv = spec.integer("model.kv_heads", c.Hkv);
  c.dA = spec.integer("model.dsff_a", c.dA);
  c.dB = spec.integer("model.dsff_b", c.dB);
  c.V = spec.integer("model.vocab", c.V);
  c.T = spec.integer("model.seq_len", c.T);
  c.Lambda = spec.integer("model.lambda", c.Lambda);
  if (spec.has("model.summary")) c.summary = parse_summary_mode(spec.text("model.summary", ""));
  c.validate();
  return c;
}

void put_model_defaults(const ModelConfig& c, po::variables_map& vm) {
  put_spec_default(vm, "model.preset", c.preset);
  put_spec_default(vm, "model.d", c.d);
  put_spec_default(vm, "model.layers", c.L);
  put_spec_default(vm, "model.heads", c.H);
  put_spec_default(vm, "model.kv_heads", c.Hkv);
  put_spec_default(vm, "model.dsff_a", c.dA);
  put_spec_default(vm, "model.dsff_b", c.dB);
  put_spec_default(vm, "model.vocab", c.V);
  put_spec_default(vm, "model.seq_len", c.T);
  put_spec_default(vm, "model.lambda", c.Lambda);
  put_spec_default(vm, "model.summary", std::string(summary_mode_name(c.summary)));
}

}  // namespace wiola::profile
