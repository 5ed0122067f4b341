// wiola-dump end to end: weights and tokens files in, loss, logits and every
// parameter's gradient out, equal to the in-process forward and backward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "backend/backend.hpp"
#include "io/h5.hpp"
#include "io/weights_file.hpp"
#include "model/stage_model.hpp"

namespace wiola {
namespace {

// Both families: the main one (ATM merging in training mode) and Wiola 13M,
// whose weights file says arch = "wiola13m".
class Dump : public ::testing::TestWithParam<const char*> {};

TEST_P(Dump, MatchesTheInProcessModel) {
  ModelConfig c = preset(GetParam());
  c.V = 40;
  c.atm = AtmMode::Causal;
  c.tau = 0.0;  // merges happen in training mode
  c.init_std = 0.2;
  auto be = make_cpu_backend();
  StageModel m(*be, c, StageSpec::whole(c), DType::F64);
  m.params().init(3);

  const std::string dir = ::testing::TempDir();
  const std::string tag = std::string(arch_name(c.arch));
  const std::string weights = dir + "dump_w_" + tag + ".h5", tokens = dir + "dump_t_" + tag + ".h5",
                    out = dir + "dump_o_" + tag + ".h5";
  std::vector<NamedArray> arrays;
  for (const ParamSpec& p : m.params().layout().entries())
    arrays.push_back({p.name, p.rows, p.cols, m.params().get(p.name)});
  write_weights_file(weights, c, arrays, DType::F64);
  {
    const h5::File w = h5::File::open_read(weights);
    ASSERT_TRUE(w.has_attr("arch"));
    EXPECT_EQ(w.read_attr_string("arch"), tag);
  }

  const int B = 2, T = 10;
  std::mt19937 gen(5);
  std::vector<std::int32_t> tok(std::size_t(B) * (T + 1));
  for (auto& t : tok) t = static_cast<std::int32_t>(gen() % c.V);
  {
    h5::File f = h5::File::create(tokens);
    f.write<std::int32_t>("tokens", {B, T + 1}, tok);
    f.close();
  }
  const std::string cmd = std::string(WIOLA_TOOLS_DIR) + "/wiola-dump/wiola-dump --weights " +
                          weights + " --tokens " + tokens + " --out " + out +
                          " --dtype fp64 --train > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  // The same computation in process.
  std::vector<std::int32_t> in, tg;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      in.push_back(tok[std::size_t(b) * (T + 1) + t]);
      tg.push_back(tok[std::size_t(b) * (T + 1) + t + 1]);
    }
  StageInput si;
  si.batch = B;
  si.seq = T;
  si.tokens = be->alloc(DType::I32, B * T, 1);
  si.targets = be->alloc(DType::I32, B * T, 1);
  be->from_host(in.data(), si.tokens);
  be->from_host(tg.data(), si.targets);
  StageSaved saved;
  m.params().zero_grads();
  const StageOutput o = m.forward(si, true, saved);
  const std::vector<double> logits = to_host_f64(*be, m.logits(saved));
  m.backward(Tensor{}, {}, 1.0 / double(B * T), saved);

  const h5::File f = h5::File::open_read(out);
  EXPECT_NEAR(f.read_scalar<double>("loss"), to_host_f64(*be, o.loss_sum)[0] / (B * T), 1e-12);
  h5::Shape shape;
  const std::vector<double> dumped = f.read<double>("logits", &shape);
  EXPECT_EQ(shape, (h5::Shape{B, T, c.V}));
  ASSERT_EQ(dumped.size(), logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) ASSERT_NEAR(dumped[i], logits[i], 1e-12);
  for (const ParamSpec& p : m.params().layout().entries()) {
    const std::vector<double> g = f.read<double>("grad/" + p.name);
    const std::vector<double> ref = m.params().get_grad(p.name);
    ASSERT_EQ(g.size(), ref.size()) << p.name;
    for (std::size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], ref[i], 1e-12) << p.name;
  }
}

INSTANTIATE_TEST_SUITE_P(BothFamilies, Dump, ::testing::Values("wiola-tiny", "wiola13m-tiny"));

}  // namespace
}  // namespace wiola
