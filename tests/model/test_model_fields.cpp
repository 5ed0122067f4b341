// The one table of ModelConfig's fields: its keys, the text form of every
// kind, and the comparison that names what differs.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/model_fields.hpp"

namespace wiola {
namespace {

TEST(ModelFields, KeysAreUniqueAndScopesNest) {
  std::set<std::string> keys, file_keys;
  std::set<std::string> shape;
  for (const ModelField& f : model_fields()) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    EXPECT_TRUE(file_keys.insert(f.file_key).second) << f.file_key;
    EXPECT_TRUE(f.in(FieldSet::All)) << f.key;
    if (f.in(FieldSet::Shape)) {
      EXPECT_TRUE(f.in(FieldSet::Stored)) << f.key;
      shape.insert(f.file_key);
    }
  }
  // The fields that decide parameter shapes (a weights file fits a model that agrees on them).
  EXPECT_EQ(shape,
            (std::set<std::string>{"arch", "d", "L", "H", "Hkv", "dA", "dB", "dff", "V"}));
  EXPECT_EQ(model_fields().size(), 22u);
}

// Each family reads its own fields; `arch` and the shared shapes both.
TEST(ModelFields, FamiliesReadTheirOwnFields) {
  std::set<std::string> main, second;
  for (const ModelField& f : model_fields()) {
    if (f.applies_to(Arch::Wiola)) main.insert(f.file_key);
    if (f.applies_to(Arch::Wiola13m)) second.insert(f.file_key);
  }
  EXPECT_EQ(second, (std::set<std::string>{"arch", "d", "L", "H", "Hkv", "dff", "V", "T", "theta0",
                                           "alpha", "eps", "gate", "init_std"}));
  EXPECT_EQ(main.count("dff") + main.count("alpha") + main.count("gate"), 0u);
  EXPECT_EQ(main.count("Lambda") + main.count("dA") + main.count("atm"), 3u);
  // Differences are compared over a's family only.
  ModelConfig a = preset("wiola13m-tiny"), b = a;
  b.Lambda = 7;  // not read by wiola13m
  EXPECT_EQ(model_differences(a, b, FieldSet::All), "");
  b.gate = GateSource::Post;
  EXPECT_EQ(model_differences(a, b, FieldSet::All), "gate pre vs post");
  EXPECT_EQ(model_differences(a, preset("wiola-tiny"), FieldSet::Shape),
            "arch wiola13m vs wiola, dff 24 vs 64");
}

TEST(ModelFields, TextOfEveryKindReadsBack) {
  ModelConfig c = preset("wiola-tiny");
  c.tau = 0.1 + 0.2;  // needs all 17 digits
  c.atm = AtmMode::Paper;
  std::ostringstream ini;
  write_model_ini(ini, c);
  EXPECT_NE(ini.str().find("kv-heads = 2\n"), std::string::npos) << ini.str();
  EXPECT_NE(ini.str().find("tau = 0.30000000000000004\n"), std::string::npos) << ini.str();
  EXPECT_NE(ini.str().find("atm = paper\n"), std::string::npos) << ini.str();

  ModelConfig back = preset("wiola-mini");
  for (const ModelField& f : model_fields()) {
    const std::string t = f.text(c);
    switch (f.kind()) {
      case FieldKind::Int: f.set_int(back, std::stoi(t)); break;
      case FieldKind::Real: f.set_real(back, std::stod(t)); break;
      case FieldKind::Choice: f.set_choice(back, t); break;
    }
  }
  EXPECT_EQ(model_differences(c, back, FieldSet::All), "");
}

TEST(ModelFields, DifferencesNameTheFields) {
  const ModelConfig a = preset("wiola-mini");
  ModelConfig b = a;
  EXPECT_EQ(model_differences(a, b, FieldSet::All), "");
  b.L = 2;
  b.V = 2048;
  b.tau = 0.5;
  b.init_std = 0.1;
  EXPECT_EQ(model_differences(a, b, FieldSet::Shape), "L 4 vs 2, V 257 vs 2048");
  // Reals in their shortest exact text (core/text.hpp shortest_real).
  EXPECT_EQ(model_differences(a, b, FieldSet::Stored), "L 4 vs 2, V 257 vs 2048, tau 0.92 vs 0.5");
  EXPECT_EQ(model_differences(a, b, FieldSet::All),
            "L 4 vs 2, V 257 vs 2048, tau 0.92 vs 0.5, init_std 0.02 vs 0.1");
}

TEST(ModelFields, AChoiceIsNotANumber) {
  ModelConfig c;
  for (const ModelField& f : model_fields()) {
    if (f.kind() == FieldKind::Choice) {
      EXPECT_THROW(f.set_choice(c, "sideways"), Error) << f.key;
      EXPECT_THROW(f.get_int(c), Error) << f.key;
    } else {
      EXPECT_THROW(f.set_choice(c, "causal"), Error) << f.key;
    }
  }
}

}  // namespace
}  // namespace wiola
