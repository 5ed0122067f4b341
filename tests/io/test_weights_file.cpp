#include <gtest/gtest.h>

#include <filesystem>

#include "io/h5.hpp"
#include "io/weights_file.hpp"
#include "io_test_util.hpp"
#include "core/param_layout.hpp"

namespace wiola {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.preset = "tiny";
  c.d = 8;
  c.L = 2;
  c.H = 2;
  c.Hkv = 1;
  c.dA = 8;
  c.dB = 32;
  c.V = 16;
  c.T = 12;
  c.theta0 = 5000.0;
  c.k_s = 7.5;
  c.a_s = 0.125;
  c.f_s = 0.02;
  c.tau = 0.875;
  c.Lambda = 3;
  c.eps = 1e-5;
  c.summary = SummaryMode::Sequence;
  c.atm = AtmMode::Paper;
  return c;
}

std::vector<NamedArray> arrays_for(const ModelConfig& c) {
  const ParamLayout layout(c, StageSpec::whole(c));
  std::vector<NamedArray> out;
  for (const auto& p : layout.entries()) {
    NamedArray a{p.name, p.rows, p.cols, {}};
    for (std::int64_t i = 0; i < p.numel(); ++i)
      a.data.push_back(0.1 * static_cast<double>(p.offset + i) + 1.0 / 3.0);
    out.push_back(std::move(a));
  }
  return out;
}

void expect_config_eq(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.d, b.d);
  EXPECT_EQ(a.L, b.L);
  EXPECT_EQ(a.H, b.H);
  EXPECT_EQ(a.Hkv, b.Hkv);
  EXPECT_EQ(a.dA, b.dA);
  EXPECT_EQ(a.dB, b.dB);
  EXPECT_EQ(a.V, b.V);
  EXPECT_EQ(a.T, b.T);
  EXPECT_EQ(a.theta0, b.theta0);
  EXPECT_EQ(a.k_s, b.k_s);
  EXPECT_EQ(a.a_s, b.a_s);
  EXPECT_EQ(a.f_s, b.f_s);
  EXPECT_EQ(a.tau, b.tau);
  EXPECT_EQ(a.Lambda, b.Lambda);
  EXPECT_EQ(a.eps, b.eps);
  EXPECT_EQ(a.summary, b.summary);
  EXPECT_EQ(a.atm, b.atm);
}

class WeightsRoundTrip : public ::testing::TestWithParam<DType> {};

TEST_P(WeightsRoundTrip, AllParametersAndAttributes) {
  test::TempDir dir;
  const std::string path = dir.file("w.h5");
  const ModelConfig c = small_config();
  const auto arrays = arrays_for(c);
  write_weights_file(path, c, arrays, GetParam());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  const WeightsFile w = read_weights_file(path);
  EXPECT_EQ(w.config.preset, "file");
  expect_config_eq(w.config, c);
  ASSERT_EQ(w.arrays.size(), arrays.size());
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    EXPECT_EQ(w.arrays[i].name, arrays[i].name);
    EXPECT_EQ(w.arrays[i].rows, arrays[i].rows);
    EXPECT_EQ(w.arrays[i].cols, arrays[i].cols);
    ASSERT_EQ(w.arrays[i].data.size(), arrays[i].data.size());
    for (std::size_t k = 0; k < arrays[i].data.size(); ++k) {
      const double want = GetParam() == DType::F32
                              ? static_cast<double>(static_cast<float>(arrays[i].data[k]))
                              : arrays[i].data[k];
      ASSERT_EQ(w.arrays[i].data[k], want) << arrays[i].name << "[" << k << "]";
    }
  }

  const h5::File f = h5::File::open_read(path);
  for (const char* a : {"d", "L", "H", "Hkv", "dA", "dB", "V", "T", "theta0", "k_s", "a_s", "f_s",
                        "tau", "Lambda", "eps", "summary", "atm"})
    EXPECT_TRUE(f.has_attr(a)) << a;
  EXPECT_EQ(f.read_attr_string("summary"), "sequence");
  EXPECT_EQ(f.read_attr_string("atm"), "paper");
  EXPECT_EQ(f.read_attr_int("Lambda"), 3);
  EXPECT_EQ(f.read_attr_double("tau"), 0.875);
  const h5::Type t = GetParam() == DType::F32 ? h5::Type::F32 : h5::Type::F64;
  EXPECT_EQ(f.file_type("embed.weight"), t);
  EXPECT_EQ(f.shape("embed.weight"), (h5::Shape{16, 8}));
  EXPECT_EQ(f.shape("layers.1.attn.k_proj.weight"), (h5::Shape{4, 8}));
  EXPECT_EQ(f.shape("layers.0.attn_norm.gamma"), (h5::Shape{8}));
  EXPECT_EQ(f.shape("layers.0.attn.ctx_logit"), (h5::Shape{1}));
  EXPECT_EQ(f.shape("final_norm.delta"), (h5::Shape{8}));
  EXPECT_EQ(f.list_datasets().size(), arrays.size());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, WeightsRoundTrip, ::testing::Values(DType::F32, DType::F64));

// Wiola 13M: the root attributes SPEC lists (arch among them) and none of the
// main family's; a file without `arch` reads as the main family.
TEST(WeightsFile, Wiola13mRecordsItsFamilysAttributes) {
  test::TempDir dir;
  ModelConfig c = preset("wiola13m-tiny");
  c.alpha = 0.125;
  c.gate = GateSource::Post;
  const auto arrays = arrays_for(c);
  write_weights_file(dir.file("w.h5"), c, arrays, DType::F32);
  {
    const h5::File f = h5::File::open_read(dir.file("w.h5"));
    EXPECT_EQ(f.read_attr_string("arch"), "wiola13m");
    EXPECT_EQ(f.read_attr_string("gate"), "post");
    EXPECT_EQ(f.read_attr_double("alpha"), 0.125);
    for (const char* a : {"d", "L", "H", "Hkv", "dff", "V", "T", "theta0", "alpha", "eps", "gate"})
      EXPECT_TRUE(f.has_attr(a)) << a;
    for (const char* a : {"dA", "dB", "k_s", "a_s", "f_s", "tau", "Lambda", "summary", "atm"})
      EXPECT_FALSE(f.has_attr(a)) << a;
    EXPECT_EQ(f.shape("layers.0.attn.gate_w2.bias"), (h5::Shape{4}));
    EXPECT_EQ(f.shape("layers.0.ffn.up.weight"), (h5::Shape{48, 16}));
  }
  const WeightsFile w = read_weights_file(dir.file("w.h5"));
  EXPECT_EQ(w.config.arch, Arch::Wiola13m);
  EXPECT_EQ(w.config.gate, GateSource::Post);
  EXPECT_EQ(w.config.alpha, 0.125);
  EXPECT_EQ(w.config.dff, 24);
  EXPECT_EQ(w.config.Hkv, 2);
  EXPECT_EQ(w.arrays.size(), arrays.size());

  // The main family's file records arch = "wiola".
  const ModelConfig m = small_config();
  write_weights_file(dir.file("m.h5"), m, arrays_for(m), DType::F32);
  EXPECT_EQ(h5::File::open_read(dir.file("m.h5")).read_attr_string("arch"), "wiola");
  EXPECT_EQ(read_weights_file(dir.file("m.h5")).config.arch, Arch::Wiola);
}

TEST(WeightsFile, MissingParameterIsNamed) {
  test::TempDir dir;
  const ModelConfig c = small_config();
  auto arrays = arrays_for(c);
  std::erase_if(arrays, [](const NamedArray& a) { return a.name == "layers.1.ffn.fuse.weight"; });
  write_weights_file(dir.file("w.h5"), c, arrays, DType::F32);
  EXPECT_ERROR(read_weights_file(dir.file("w.h5")),
               "w.h5: parameter 'layers.1.ffn.fuse.weight' is missing");
}

TEST(WeightsFile, MisShapedParameterIsNamed) {
  test::TempDir dir;
  const ModelConfig c = small_config();
  auto arrays = arrays_for(c);
  for (auto& a : arrays)
    if (a.name == "layers.0.attn.q_proj.weight") {
      a.rows = 4;
      a.data.resize(32);
    }
  write_weights_file(dir.file("w.h5"), c, arrays, DType::F64);
  EXPECT_ERROR(read_weights_file(dir.file("w.h5")), "w.h5: parameter 'layers.0.attn.q_proj.weight'",
               "has shape [4, 8], expected [8, 8]");
}

TEST(WeightsFile, Errors) {
  test::TempDir dir;
  const ModelConfig c = small_config();
  const auto arrays = arrays_for(c);
  EXPECT_ERROR(write_weights_file(dir.file("w.h5"), c, arrays, DType::BF16), "fp32 or fp64");
  auto bad = arrays;
  bad[0].data.pop_back();
  EXPECT_ERROR(write_weights_file(dir.file("w.h5"), c, bad, DType::F32), "embed.weight",
               "holds 127 values");
  EXPECT_FALSE(std::filesystem::exists(dir.file("w.h5")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("w.h5.tmp")));

  write_weights_file(dir.file("w.h5"), c, arrays, DType::F32);
  {
    h5::File f = h5::File::open_rw(dir.file("w.h5"));
    f.write_attr_int("H", 3);
  }
  EXPECT_ERROR(read_weights_file(dir.file("w.h5")), "w.h5", "not divisible by H = 3");
  {
    h5::File f = h5::File::open_rw(dir.file("w.h5"));
    f.write_attr_int("H", 2);
    f.write_attr_string("atm", "sideways");
  }
  EXPECT_ERROR(read_weights_file(dir.file("w.h5")), "w.h5", "sideways");
  EXPECT_ERROR(read_weights_file(dir.file("none.h5")), "none.h5: no such file");
}

TEST(WeightsFile, TokenMatrix) {
  test::TempDir dir;
  std::vector<std::uint16_t> t(3 * 9);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<std::uint16_t>(i * 7);
  {
    h5::File f = h5::File::create(dir.file("tok.h5"));
    f.write<std::uint16_t>("tokens", {3, 9}, t);
  }
  std::int64_t rows = 0, cols = 0;
  const auto m = read_token_matrix(dir.file("tok.h5"), rows, cols);
  EXPECT_EQ(rows, 3);
  EXPECT_EQ(cols, 9);
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(m[i], static_cast<std::int32_t>(t[i]));
  {
    h5::File f = h5::File::create(dir.file("flat.h5"));
    f.write<std::int32_t>("tokens", {4}, std::vector<std::int32_t>{1, 2, 3, 4});
    f.write<double>("other", {1}, std::vector<double>{1});
  }
  EXPECT_ERROR(read_token_matrix(dir.file("flat.h5"), rows, cols), "flat.h5",
               "must be 2-D [B, T+1]");
  {
    h5::File f = h5::File::create(dir.file("float.h5"));
    f.write<float>("tokens", {1, 2}, std::vector<float>{1, 2});
  }
  EXPECT_ERROR(read_token_matrix(dir.file("float.h5"), rows, cols), "must hold integers");
  {
    h5::File f = h5::File::create(dir.file("neg.h5"));
    f.write<std::int32_t>("tokens", {1, 2}, std::vector<std::int32_t>{1, -2});
  }
  EXPECT_ERROR(read_token_matrix(dir.file("neg.h5"), rows, cols), "neg.h5", "token id -2 at [0, 1]");
}

}  // namespace
}  // namespace wiola
