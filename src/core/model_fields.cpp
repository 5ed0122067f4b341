#include "core/model_fields.hpp"

#include <ostream>
#include <sstream>
#include <type_traits>

#include "core/error.hpp"
#include "core/text.hpp"

namespace wiola {

namespace {

using C = ModelConfig;
constexpr FieldSet kShape = FieldSet::Shape, kStored = FieldSet::Stored, kAll = FieldSet::All;
constexpr FieldFamily kBoth = FieldFamily::Both, kMain = FieldFamily::Main,
                      k13m = FieldFamily::Wiola13m;

// clang-format off
const ModelField kFields[] = {
  // key        file key  config.json name           scope    family member         help
  {"arch",      "arch",   nullptr,                   kShape,  kBoth, &C::arch,     "architecture family: wiola (the main family) | wiola13m (gated spiral attention, butterfly FFN)"},
  {"d",         "d",      "hidden_size",             kShape,  kBoth, &C::d,        "hidden width (overrides the preset)"},
  {"layers",    "L",      "num_hidden_layers",       kShape,  kBoth, &C::L,        "number of layers L"},
  {"heads",     "H",      "num_attention_heads",     kShape,  kBoth, &C::H,        "query heads H"},
  {"kv-heads",  "Hkv",    "num_key_value_heads",     kShape,  kBoth, &C::Hkv,      "key/value heads Hkv"},
  {"dsff-a",    "dA",     "dsff_narrow_intermediate_size", kShape, kMain, &C::dA,       "DSFF narrow width dA (wiola)"},
  {"dsff-b",    "dB",     "dsff_wide_intermediate_size", kShape, kMain, &C::dB,       "DSFF wide width dB (wiola)"},
  {"dff",       "dff",    "intermediate_size",       kShape,  k13m,  &C::dff,      "butterfly FFN width dff (wiola13m)"},
  {"vocab",     "V",      "vocab_size",              kShape,  kBoth, &C::V,        "vocabulary size V (default: the dataset's)"},
  {"seq-len",   "T",      "max_position_embeddings", kStored, kBoth, &C::T,        "context length T"},
  {"theta0",    "theta0", "rope_theta",              kStored, kBoth, &C::theta0,   "SRPE (wiola) or spiral RoPE (wiola13m) base theta"},
  {"k-s",       "k_s",    nullptr,                   kStored, kMain, &C::k_s,      "SRPE spiral divisor k_s (wiola)"},
  {"a-s",       "a_s",    nullptr,                   kStored, kMain, &C::a_s,      "SRPE radial amplitude a_s (wiola)"},
  {"f-s",       "f_s",    nullptr,                   kStored, kMain, &C::f_s,      "SRPE radial frequency f_s (wiola)"},
  {"alpha",     "alpha",  nullptr,                   kStored, k13m,  &C::alpha,    "spiral RoPE growth alpha (wiola13m; 0: plain interleaved RoPE)"},
  {"tau",       "tau",    nullptr,                   kStored, kMain, &C::tau,      "ATM merge threshold (wiola)"},
  {"lambda",    "Lambda", nullptr,                   kStored, kMain, &C::Lambda,   "GCLA lookback (summaries per context; wiola)"},
  {"norm-eps",  "eps",    "rms_norm_eps",            kStored, kBoth, &C::eps,      "(W)RMSNorm epsilon"},
  {"summary",   "summary", nullptr,                  kStored, kMain, &C::summary,  "GCLA summaries (wiola): causal (default) | sequence (paper-literal, leaks)"},
  {"atm",       "atm",    nullptr,                   kStored, kMain, &C::atm,      "token merging (wiola): causal (default) | paper (paper-literal, leaks) | off"},
  {"gate",      "gate",   nullptr,                   kStored, k13m,  &C::gate,     "gated spiral attention's gate input (wiola13m): pre (queries before RoPE, default) | post"},
  {"init-std",  "init_std", nullptr,                 kAll,    kBoth, &C::init_std, "std of the normal initialisation"},
};
// clang-format on

template <class T>
T ModelConfig::*member_of(const ModelField& f) {
  const auto* m = std::get_if<T ModelConfig::*>(&f.member);
  require(m != nullptr, "model field '", f.key, "' is not of the kind asked for (internal error)");
  return *m;
}

}  // namespace

FieldKind ModelField::kind() const {
  if (std::holds_alternative<int ModelConfig::*>(member)) return FieldKind::Int;
  if (std::holds_alternative<double ModelConfig::*>(member)) return FieldKind::Real;
  return FieldKind::Choice;
}

bool ModelField::in(FieldSet s) const {
  // Shape ⊂ Stored ⊂ All: a field belongs to its own scope and every wider one.
  return static_cast<int>(scope) >= static_cast<int>(s);
}

bool ModelField::applies_to(Arch a) const {
  switch (family) {
    case FieldFamily::Both: return true;
    case FieldFamily::Main: return a == Arch::Wiola;
    case FieldFamily::Wiola13m: return a == Arch::Wiola13m;
  }
  return true;
}

int ModelField::get_int(const ModelConfig& c) const { return c.*member_of<int>(*this); }
double ModelField::get_real(const ModelConfig& c) const { return c.*member_of<double>(*this); }
void ModelField::set_int(ModelConfig& c, int v) const { c.*member_of<int>(*this) = v; }
void ModelField::set_real(ModelConfig& c, double v) const { c.*member_of<double>(*this) = v; }

std::string ModelField::text(const ModelConfig& c) const {
  return std::visit(
      [&](auto m) -> std::string {
        const auto& v = c.*m;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return shortest_real(v);
        } else if constexpr (std::is_same_v<T, SummaryMode>) {
          return std::string(summary_mode_name(v));
        } else if constexpr (std::is_same_v<T, AtmMode>) {
          return std::string(atm_mode_name(v));
        } else if constexpr (std::is_same_v<T, Arch>) {
          return std::string(arch_name(v));
        } else {
          return std::string(gate_source_name(v));
        }
      },
      member);
}

void ModelField::set_choice(ModelConfig& c, std::string_view name) const {
  if (const auto* m = std::get_if<SummaryMode ModelConfig::*>(&member))
    c.*(*m) = parse_summary_mode(name);
  else if (const auto* a = std::get_if<AtmMode ModelConfig::*>(&member))
    c.*(*a) = parse_atm_mode(name);
  else if (const auto* r = std::get_if<Arch ModelConfig::*>(&member))
    c.*(*r) = parse_arch(name);
  else if (const auto* g = std::get_if<GateSource ModelConfig::*>(&member))
    c.*(*g) = parse_gate_source(name);
  else
    fail("model field '", key, "' is not a choice (internal error)");
}

std::span<const ModelField> model_fields() { return kFields; }

void write_model_ini(std::ostream& out, const ModelConfig& c) {
  for (const ModelField& f : model_fields()) out << f.key << " = " << f.text(c) << "\n";
}

std::string model_differences(const ModelConfig& a, const ModelConfig& b, FieldSet set) {
  std::string out;
  for (const ModelField& f : model_fields()) {
    if (!f.in(set) || !f.applies_to(a.arch)) continue;
    const bool same = std::visit([&](auto m) { return a.*m == b.*m; }, f.member);
    if (same) continue;
    out += (out.empty() ? "" : ", ") + std::string(f.file_key) + " " + f.text(a) + " vs " + f.text(b);
  }
  return out;
}

}  // namespace wiola
