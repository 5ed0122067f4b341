#pragma once
// One table of ModelConfig's fields. Every place that writes, reads or
// compares a configuration goes through it: wiola-train's model options and
// the INI text it records in checkpoints, the weights-file attributes
// (io/weights_file.cpp), config.json (io/safetensors.cpp) and the equality
// checks. A field is named here once, with each spelling it has on disk.
//
// `preset` is not a field: it names the starting point the fields override.
// `arch` is one: it picks the family, and each field says which families
// read it. Files record the fields of their model's family only (plus `arch`;
// a file without it is of the main family); the INI text records every field.
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "core/model_config.hpp"

namespace wiola {

enum class FieldKind : std::uint8_t { Int, Real, Choice };

// Which fields a helper works on.
enum class FieldSet : std::uint8_t {
  All,     // every field
  Stored,  // the architecture: what weights files and config.json record (all but init-std)
  Shape,   // the fields that decide parameter shapes (arch, d, L, H, Hkv, dA, dB, dff, V)
};

// Which architecture families read a field (ModelConfig's [main] / [13m] marks).
enum class FieldFamily : std::uint8_t { Both, Main, Wiola13m };

struct ModelField {
  using Member = std::variant<int ModelConfig::*, double ModelConfig::*,
                              SummaryMode ModelConfig::*, AtmMode ModelConfig::*,
                              Arch ModelConfig::*, GateSource ModelConfig::*>;

  const char* key;       // option and INI key: "kv-heads"
  const char* file_key;  // weights-file attribute and config.json key: "Hkv"
  // Its name in a Hugging Face config.json: the standard key where there is
  // one (hidden_size, rope_theta, ...), a descriptive one for the DSFF widths;
  // nullptr: config.json uses file_key (the SPEC's Wiola-only fields: k_s, tau, ...).
  const char* hf_key;
  FieldSet scope;        // the narrowest set it belongs to: Shape ⊂ Stored ⊂ All
  FieldFamily family;    // the families whose models read it
  Member member;
  const char* help;      // the option's description (wiola-train --help)

  FieldKind kind() const;
  bool in(FieldSet s) const;
  // Whether a model of family `a` reads this field.
  bool applies_to(Arch a) const;

  int get_int(const ModelConfig& c) const;        // kind Int
  double get_real(const ModelConfig& c) const;    // kind Real
  void set_int(ModelConfig& c, int v) const;      // kind Int
  void set_real(ModelConfig& c, double v) const;  // kind Real
  // Any kind as text: integers in decimal, reals in the shortest text that
  // reads back exactly (core/text.hpp shortest_real), choices by name ("causal").
  std::string text(const ModelConfig& c) const;
  // Choices (and only choices) from text; throws wiola::Error for an unknown name.
  void set_choice(ModelConfig& c, std::string_view name) const;
};

// Every field, in the order of wiola-train --help and of the INI text.
std::span<const ModelField> model_fields();

// "key = value" lines of every field, in table order.
void write_model_ini(std::ostream& out, const ModelConfig& c);

// The fields of `set` on which a and b differ, as "L 4 vs 2, V 257 vs 2048"
// (file keys, a's value first); empty when they agree. Only the fields a's
// family reads are compared (and `arch`, which every family reads).
std::string model_differences(const ModelConfig& a, const ModelConfig& b, FieldSet set);

}  // namespace wiola
