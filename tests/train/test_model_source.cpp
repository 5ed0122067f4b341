// Model sources for the inference tools: a weights file and a safetensors
// export load into any stage of any split with the same values; what a path
// is not, and a tokenizer that does not fit, are refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backend/backend.hpp"
#include "core/model_fields.hpp"
#include "io/safetensors.hpp"
#include "io/weights_file.hpp"
#include "train/model_source.hpp"

namespace wiola {
namespace {

namespace fs = std::filesystem;

ModelConfig small_config(int vocab) {
  ModelConfig c = preset("wiola-tiny");
  c.V = vocab;
  return c;
}

std::vector<NamedArray> arrays_of(const StageModel& m) {
  std::vector<NamedArray> out;
  for (const ParamSpec& p : m.params().layout().entries())
    out.push_back({p.name, p.rows, p.cols, m.params().get(p.name)});
  return out;
}

// Every parameter of each stage of a 2-stage split equals the whole model's.
void expect_split_loads(const ModelSource& src, const StageModel& whole) {
  auto be = make_cpu_backend();
  const ModelConfig& c = src.config;
  for (const StageSpec& spec : {StageSpec{0, 2, true, false}, StageSpec{2, c.L, false, true}}) {
    StageModel part(*be, c, spec, DType::F64);
    load_parameters(src, part);
    for (const ParamSpec& p : part.params().layout().entries())
      EXPECT_EQ(part.params().get(p.name), whole.params().get(p.name)) << p.name;
  }
}

TEST(ModelSource, WeightsFileAndSafetensorsLoadIntoAnyStage) {
  const ModelConfig c = small_config(300);
  auto be = make_cpu_backend();
  StageModel whole(*be, c, StageSpec::whole(c), DType::F64);
  whole.params().init(9);
  const std::string dir = ::testing::TempDir() + "model_source/";
  fs::create_directories(dir + "hf");
  write_weights_file(dir + "w.h5", c, arrays_of(whole), DType::F64);

  const ModelSource w = open_model_source(dir + "w.h5");
  EXPECT_EQ(w.kind, ModelSource::Kind::WeightsFile);
  EXPECT_EQ(model_differences(w.config, c, FieldSet::Stored), "");
  EXPECT_FALSE(w.run.has_value());
  expect_split_loads(w, whole);

  std::vector<SafeTensor> tensors;
  std::vector<std::string> names;
  for (const NamedArray& a : arrays_of(whole)) {
    tensors.push_back({a.name, {a.rows, a.cols}, a.data});
    names.push_back(a.name);
  }
  write_safetensors(dir + "hf/model.safetensors", tensors, DType::F64, {});
  HfConfigExtras extras;
  extras.names = names;
  extras.dtype = DType::F64;
  write_hf_config(dir + "hf/config.json", c, extras);
  for (const std::string& path : {dir + "hf", dir + "hf/model.safetensors"}) {
    const ModelSource s = open_model_source(path);
    EXPECT_EQ(s.kind, ModelSource::Kind::Safetensors);
    expect_split_loads(s, whole);
  }
}

TEST(ModelSource, RefusesWhatIsNotAModel) {
  const std::string dir = ::testing::TempDir() + "model_source_bad/";
  fs::create_directories(dir + "empty");
  EXPECT_THROW(open_model_source(dir + "nothing-here"), Error);
  try {
    open_model_source(dir + "empty");
    FAIL() << "an empty directory was taken for a model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a checkpoint, nor a save folder"), std::string::npos) << e.what();
  }
  fs::create_directories(dir + "lonely");
  { std::ofstream(dir + "lonely/model.safetensors") << "x"; }
  EXPECT_THROW(open_model_source(dir + "lonely"), Error);  // no config.json beside it
}

TEST(ModelSource, TheTokenizerMustBeKnownAndFitTheVocabulary) {
  for (int vocab : {100, 300}) {
    const ModelConfig c = small_config(vocab);
    auto be = make_cpu_backend();
    StageModel whole(*be, c, StageSpec::whole(c), DType::F32);
    whole.params().init(1);
    const std::string path = ::testing::TempDir() + "tok_" + std::to_string(vocab) + ".h5";
    write_weights_file(path, c, arrays_of(whole), DType::F32);
    const ModelSource src = open_model_source(path);
    try {
      model_tokenizer(src, "");
      FAIL() << "a weights file has no recorded tokenizer";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("give --tokenizer"), std::string::npos) << e.what();
    }
    if (vocab < 257) {
      try {
        model_tokenizer(src, "byte");
        FAIL() << "257 byte ids do not fit a vocabulary of " << vocab;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("more than the model's vocabulary of 100"),
                  std::string::npos)
            << e.what();
      }
    } else {
      EXPECT_EQ(model_tokenizer(src, "byte")->vocab_size(), 257);
    }
  }
}

}  // namespace
}  // namespace wiola
