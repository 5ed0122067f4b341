#include "io/model_config_io.hpp"

#include <limits>
#include <variant>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/model_fields.hpp"
#include "io/h5.hpp"

namespace wiola {

namespace {

// The architecture field (every file of the second family records it; a file
// without it is of the main family).
const ModelField& arch_field() {
  for (const ModelField& m : model_fields())
    if (std::holds_alternative<Arch ModelConfig::*>(m.member)) return m;
  fail("the field table has no architecture field (internal error)");
}

// Whether a file records field m for a model of family `a`.
bool recorded(const ModelField& m, Arch a) { return m.in(FieldSet::Stored) && m.applies_to(a); }

}  // namespace

void write_model_attrs(h5::File& f, const ModelConfig& c) {
  for (const ModelField& m : model_fields()) {
    if (!recorded(m, c.arch)) continue;
    switch (m.kind()) {
      case FieldKind::Int: f.write_attr_int(m.file_key, m.get_int(c)); break;
      case FieldKind::Real: f.write_attr_double(m.file_key, m.get_real(c)); break;
      case FieldKind::Choice: f.write_attr_string(m.file_key, m.text(c)); break;
    }
  }
}

ModelConfig read_model_attrs(const h5::File& f) {
  ModelConfig c;
  c.preset = "file";
  const ModelField& arch = arch_field();
  if (f.has_attr(arch.file_key)) {
    try {
      arch.set_choice(c, f.read_attr_string(arch.file_key));
    } catch (const Error& e) {
      fail(f.path(), ": ", e.what());
    }
  }
  for (const ModelField& m : model_fields()) {
    if (!recorded(m, c.arch) || &m == &arch) continue;
    switch (m.kind()) {
      case FieldKind::Int: {
        const std::int64_t v = f.read_attr_int(m.file_key);
        require(v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max(),
                f.path(), ": attribute '", m.file_key, "' = ", v, " is out of range");
        m.set_int(c, static_cast<int>(v));
        break;
      }
      case FieldKind::Real: m.set_real(c, f.read_attr_double(m.file_key)); break;
      case FieldKind::Choice: {
        const std::string name = f.read_attr_string(m.file_key);
        try {
          m.set_choice(c, name);
        } catch (const Error& e) {
          fail(f.path(), ": ", e.what());
        }
        break;
      }
    }
  }
  return c;
}

void write_model_json(nlohmann::json& j, const ModelConfig& c) {
  for (const ModelField& m : model_fields()) {
    if (!recorded(m, c.arch)) continue;
    nlohmann::json v;
    switch (m.kind()) {
      case FieldKind::Int: v = m.get_int(c); break;
      case FieldKind::Real: v = m.get_real(c); break;
      case FieldKind::Choice: v = m.text(c); break;
    }
    j[m.hf_key ? m.hf_key : m.file_key] = v;  // each value once
  }
}

ModelConfig read_model_json(const nlohmann::json& j) {
  ModelConfig c;
  c.preset = "safetensors";
  const ModelField& arch = arch_field();
  if (j.contains(arch.file_key)) arch.set_choice(c, j.at(arch.file_key).get<std::string>());
  for (const ModelField& m : model_fields()) {
    if (!recorded(m, c.arch) || &m == &arch) continue;
    // The config.json name first, then the file key (files written before
    // config.json took the standard names carry both or only the file key).
    const char* key = m.hf_key && j.contains(m.hf_key) ? m.hf_key : m.file_key;
    if (!j.contains(key)) {
      if (m.hf_key) fail("'", m.hf_key, "' (or '", m.file_key, "') not found");
      fail("'", m.file_key, "' not found");
    }
    const nlohmann::json& v = j.at(key);
    switch (m.kind()) {
      case FieldKind::Int: m.set_int(c, v.get<int>()); break;
      case FieldKind::Real: m.set_real(c, v.get<double>()); break;
      case FieldKind::Choice: m.set_choice(c, v.get<std::string>()); break;
    }
  }
  return c;
}

}  // namespace wiola
