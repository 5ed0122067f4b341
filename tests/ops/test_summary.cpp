// summary_fwd / summary_bwd: causal prefix mean and whole-sequence mean.
#include "op_test_util.hpp"

namespace wiola::test {
namespace {

constexpr int B = 2, T = 5;
constexpr std::int64_t D = 6;

std::vector<double> ref_summary(SummaryMode mode, const std::vector<double>& x) {
  if (mode == SummaryMode::Causal) {
    std::vector<double> s(B * T * D, 0.0);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t)
        for (std::int64_t c = 0; c < D; ++c) {
          double acc = 0;
          for (int u = 0; u <= t; ++u) acc += x[(b * T + u) * D + c];
          s[(b * T + t) * D + c] = acc / (t + 1);
        }
    return s;
  }
  std::vector<double> s(B * D, 0.0);
  for (int b = 0; b < B; ++b)
    for (std::int64_t c = 0; c < D; ++c) {
      double acc = 0;
      for (int u = 0; u < T; ++u) acc += x[(b * T + u) * D + c];
      s[b * D + c] = acc / T;
    }
  return s;
}

std::int64_t rows_of(SummaryMode m) { return m == SummaryMode::Causal ? B * T : B; }

class Summary : public ::testing::TestWithParam<SummaryMode> {};

TEST_P(Summary, ForwardMatchesReference) {
  const SummaryMode mode = GetParam();
  auto be = make_cpu_backend();
  const auto x = random_vector(B * T * D, 1);
  const auto ref = ref_summary(mode, x);
  std::vector<double> s64;
  for (DType dt : {DType::F64, DType::F32}) {
    Strided sx = strided(*be, dt, B * T, D, 3, 2), ss = strided(*be, dt, rows_of(mode), D, 2, 1);
    write(*be, sx.view, x);
    be->summary_fwd(mode, sx.view, B, T, ss.view);
    const auto s = read(*be, ss.view);
    expect_close(s, ref, dt == DType::F64 ? 1e-15 : 1e-6, "summary_fwd");
    EXPECT_TRUE(outside_untouched(*be, ss, 1));
    if (dt == DType::F64) s64 = s;
    else expect_close(s, s64, 1e-6, "fp32 vs fp64");
  }
}

TEST_P(Summary, BackwardMatchesFiniteDifferencesAndAdds) {
  const SummaryMode mode = GetParam();
  const std::string name = mode == SummaryMode::Causal ? "summary_causal" : "summary_sequence";
  auto be = make_cpu_backend();
  auto x = random_vector(B * T * D, 2);
  const auto r = random_vector(rows_of(mode) * D, 3);
  auto loss = [&] {
    Tensor s = be->alloc(DType::F64, rows_of(mode), D);
    be->summary_fwd(mode, upload(*be, DType::F64, B * T, D, x), B, T, s);
    return weighted_sum(read(*be, s), r);
  };
  const auto dx0 = random_vector(B * T * D, 4);
  Strided sdx = strided(*be, DType::F64, B * T, D, 2, 2);
  write(*be, sdx.view, dx0);
  be->summary_bwd(mode, upload(*be, DType::F64, rows_of(mode), D, r), B, T, sdx.view);
  EXPECT_TRUE(outside_untouched(*be, sdx, 2));
  auto g = read(*be, sdx.view);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] -= dx0[i];
  expect_grad(name, "dx", check_gradient(x, loss, g));
}

TEST_P(Summary, DeterministicAcrossThreadCounts) {
  const SummaryMode mode = GetParam();
  auto be = make_cpu_backend();
  const int b = 3, t = 120;
  const std::int64_t d = 300;
  const std::int64_t rows = mode == SummaryMode::Causal ? b * t : b;
  const auto x = random_vector(b * t * d, 5), ds = random_vector(rows * d, 6);
  for (DType dt : {DType::F64, DType::F32}) {
    std::vector<double> res[2];
    for (int threads : {1, 2})
      with_threads(threads, [&] {
        Tensor X = upload(*be, dt, b * t, d, x), S = be->alloc(dt, rows, d);
        be->summary_fwd(mode, X, b, t, S);
        be->summary_bwd(mode, upload(*be, dt, rows, d, ds), b, t, X);
        auto& r = res[threads - 1];
        r = read(*be, S);
        const auto v = read(*be, X);
        r.insert(r.end(), v.begin(), v.end());
      });
    EXPECT_TRUE(bit_identical(res[0], res[1]));
  }
}

TEST_P(Summary, ShapeErrors) {
  auto be = make_cpu_backend();
  Tensor x = be->alloc(DType::F32, B * T, D);
  EXPECT_THROW(be->summary_fwd(GetParam(), x, B, T + 1, be->alloc(DType::F32, B * (T + 1), D)),
               Error);
  EXPECT_THROW(be->summary_fwd(GetParam(), x, B, T, be->alloc(DType::F32, 1, D)), Error);
}

std::string mode_name(const ::testing::TestParamInfo<SummaryMode>& p) {
  return p.param == SummaryMode::Causal ? "Causal" : "Sequence";
}

INSTANTIATE_TEST_SUITE_P(Modes, Summary,
                         ::testing::Values(SummaryMode::Causal, SummaryMode::Sequence), mode_name);

}  // namespace
}  // namespace wiola::test
