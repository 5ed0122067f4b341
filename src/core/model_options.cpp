#include "core/model_options.hpp"

#include <string>

#include "core/model_fields.hpp"

namespace po = boost::program_options;

namespace wiola {

void add_model_options(po::options_description& group) {
  auto add = group.add_options();
  for (const ModelField& f : model_fields()) {
    switch (f.kind()) {
      case FieldKind::Int: add(f.key, po::value<int>(), f.help); break;
      case FieldKind::Real: add(f.key, po::value<double>(), f.help); break;
      case FieldKind::Choice: add(f.key, po::value<std::string>(), f.help); break;
    }
  }
}

void apply_model_options(const po::variables_map& vm, ModelConfig& c) {
  for (const ModelField& f : model_fields()) {
    if (!vm.count(f.key)) continue;
    const po::variable_value& v = vm[f.key];
    switch (f.kind()) {
      case FieldKind::Int: f.set_int(c, v.as<int>()); break;
      case FieldKind::Real: f.set_real(c, v.as<double>()); break;
      case FieldKind::Choice: f.set_choice(c, v.as<std::string>()); break;
    }
  }
}

}  // namespace wiola
