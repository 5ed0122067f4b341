// head_mean_fwd/bwd and head_scale_fwd/bwd (Wiola 13M's gate): forward against
// naive fp64 references on strided views, backward against finite
// differences, the accumulate flag, in place, and thread-count independence.
#include "op_test_util.hpp"

namespace wiola::test {
namespace {

constexpr std::int64_t kN = 7, kHeads = 3, kDh = 5, kW = kHeads * kDh;

std::vector<double> ref_mean(const std::vector<double>& x, std::int64_t n) {
  std::vector<double> y(static_cast<std::size_t>(n * kDh), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < kDh; ++j) {
      double s = 0;
      for (std::int64_t h = 0; h < kHeads; ++h) s += x[i * kW + h * kDh + j];
      y[i * kDh + j] = s / kHeads;
    }
  return y;
}

std::vector<double> ref_scale(const std::vector<double>& x, const std::vector<double>& s,
                              std::int64_t n) {
  std::vector<double> y(x.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < kW; ++c) y[i * kW + c] = s[i * kHeads + c / kDh] * x[i * kW + c];
  return y;
}

TEST(HeadMean, ForwardMatchesReferenceOnStridedViews) {
  auto be = make_cpu_backend();
  const auto x = random_vector(kN * kW, 1);
  for (DType dt : {DType::F64, DType::F32}) {
    Strided sx = strided(*be, dt, kN, kW, 4, 2), sy = strided(*be, dt, kN, kDh, 3, 1);
    write(*be, sx.view, x);
    be->head_mean_fwd(sx.view, kDh, sy.view);
    expect_close(read(*be, sy.view), ref_mean(x, kN), dt == DType::F64 ? 1e-15 : 1e-6,
                 "head_mean_fwd");
    EXPECT_TRUE(outside_untouched(*be, sy, 1));
  }
}

TEST(HeadMean, BackwardMatchesFiniteDifferencesAndAccumulates) {
  auto be = make_cpu_backend();
  auto x = random_vector(kN * kW, 2);
  const auto r = random_vector(kN * kDh, 3);
  auto loss = [&] {
    Tensor y = be->alloc(DType::F64, kN, kDh);
    be->head_mean_fwd(upload(*be, DType::F64, kN, kW, x), kDh, y);
    return weighted_sum(read(*be, y), r);
  };
  Strided dx = strided(*be, DType::F64, kN, kW, 2, 1);
  be->head_mean_bwd(upload(*be, DType::F64, kN, kDh, r), kDh, dx.view, false);
  const auto g = read(*be, dx.view);
  expect_grad("head_mean", "dx", check_gradient(x, loss, g));
  EXPECT_TRUE(outside_untouched(*be, dx, 1));
  // accumulate = true adds the same values again.
  be->head_mean_bwd(upload(*be, DType::F64, kN, kDh, r), kDh, dx.view, true);
  const auto twice = read(*be, dx.view);
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_EQ(twice[i], 2 * g[i]);
}

TEST(HeadScale, ForwardMatchesReferenceAndRunsInPlace) {
  auto be = make_cpu_backend();
  const auto x = random_vector(kN * kW, 4), s = random_vector(kN * kHeads, 5, 0, 1);
  for (DType dt : {DType::F64, DType::F32}) {
    Strided sx = strided(*be, dt, kN, kW, 4, 2), sy = strided(*be, dt, kN, kW, 3, 3);
    write(*be, sx.view, x);
    const Tensor S = upload(*be, dt, kN, kHeads, s);
    be->head_scale_fwd(sx.view, S, kDh, sy.view);
    const auto y = read(*be, sy.view);
    expect_close(y, ref_scale(x, s, kN), dt == DType::F64 ? 1e-15 : 1e-6, "head_scale_fwd");
    EXPECT_TRUE(outside_untouched(*be, sy, 3));
    be->head_scale_fwd(sx.view, S, kDh, sx.view);
    EXPECT_TRUE(bit_identical(read(*be, sx.view), y));
  }
}

TEST(HeadScale, BackwardMatchesFiniteDifferences) {
  auto be = make_cpu_backend();
  auto x = random_vector(kN * kW, 6), s = random_vector(kN * kHeads, 7, 0, 1);
  const auto r = random_vector(kN * kW, 8);
  auto loss = [&] {
    Tensor y = be->alloc(DType::F64, kN, kW);
    be->head_scale_fwd(upload(*be, DType::F64, kN, kW, x), upload(*be, DType::F64, kN, kHeads, s),
                       kDh, y);
    return weighted_sum(read(*be, y), r);
  };
  const Tensor X = upload(*be, DType::F64, kN, kW, x), S = upload(*be, DType::F64, kN, kHeads, s);
  // Outputs start as NaN: both are written, never added to.
  Tensor dx = be->alloc(DType::F64, kN, kW), ds = be->alloc(DType::F64, kN, kHeads);
  be->fill(dx, std::nan(""));
  be->fill(ds, std::nan(""));
  const Tensor dy = upload(*be, DType::F64, kN, kW, r);
  be->head_scale_bwd(X, S, dy, kDh, dx, ds);
  const auto gx = read(*be, dx), gs = read(*be, ds);
  expect_grad("head_scale", "dx", check_gradient(x, loss, gx));
  expect_grad("head_scale", "ds", check_gradient(s, loss, gs));
  // dx may be dy.
  be->head_scale_bwd(X, S, dy, kDh, dy, ds);
  EXPECT_TRUE(bit_identical(read(*be, dy), gx));
  EXPECT_TRUE(bit_identical(read(*be, ds), gs));
}

TEST(Heads, DeterministicAcrossThreadCountsAndBadShapesRefused) {
  auto be = make_cpu_backend();
  const std::int64_t n = 3000, heads = 8, dh = 16, w = heads * dh;
  const auto x = random_vector(n * w, 9), s = random_vector(n * heads, 10);
  std::vector<double> res[2];
  for (int threads : {1, 2})
    with_threads(threads, [&] {
      const Tensor X = upload(*be, DType::F32, n, w, x), S = upload(*be, DType::F32, n, heads, s);
      Tensor m = be->alloc(DType::F32, n, dh), y = be->alloc(DType::F32, n, w);
      Tensor dx = be->alloc(DType::F32, n, w), ds = be->alloc(DType::F32, n, heads);
      be->head_mean_fwd(X, dh, m);
      be->head_scale_fwd(X, S, dh, y);
      be->head_scale_bwd(X, S, y, dh, dx, ds);
      be->head_mean_bwd(m, dh, dx, true);
      for (const Tensor* t : {&m, &y, &dx, &ds}) {
        const auto v = read(*be, *t);
        res[threads - 1].insert(res[threads - 1].end(), v.begin(), v.end());
      }
    });
  EXPECT_TRUE(bit_identical(res[0], res[1]));

  Tensor bad = be->alloc(DType::F32, 4, 12);
  EXPECT_THROW(be->head_mean_fwd(bad, 5, be->alloc(DType::F32, 4, 5)), Error);  // 12 % 5
  EXPECT_THROW(be->head_mean_fwd(bad, 4, be->alloc(DType::F32, 4, 3)), Error);
  EXPECT_THROW(be->head_scale_fwd(bad, be->alloc(DType::F32, 4, 2), 4, bad), Error);  // 3 heads
  EXPECT_THROW(be->head_scale_fwd(bad, be->alloc(DType::F64, 4, 3), 4, bad), Error);
  EXPECT_THROW(be->head_scale_bwd(bad, be->alloc(DType::F32, 4, 3), bad, 4, bad,
                                  be->alloc(DType::F32, 4, 4)),
               Error);
}

}  // namespace
}  // namespace wiola::test
