// wrmsnorm_fwd / wrmsnorm_bwd: y = γ ⊙ (x + δ) / sqrt(mean((x + δ)²) + eps),
// and plain RMSNorm (δ undefined, Wiola 13M).
#include "op_test_util.hpp"

namespace wiola::test {
namespace {

constexpr double kEps = 1e-6;

struct NormRef {
  std::vector<double> y, rstd;
};

NormRef ref_norm(const std::vector<double>& x, const std::vector<double>& g,
                 const std::vector<double>& dl, std::int64_t n, std::int64_t d, double eps) {
  NormRef r{std::vector<double>(n * d), std::vector<double>(n)};
  for (std::int64_t i = 0; i < n; ++i) {
    double ss = 0;
    for (std::int64_t j = 0; j < d; ++j) ss += (x[i * d + j] + dl[j]) * (x[i * d + j] + dl[j]);
    const double rs = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
    r.rstd[i] = rs;
    for (std::int64_t j = 0; j < d; ++j) r.y[i * d + j] = g[j] * (x[i * d + j] + dl[j]) * rs;
  }
  return r;
}

TEST(WRMSNorm, ForwardMatchesReferenceOnStridedViews) {
  auto be = make_cpu_backend();
  const std::int64_t n = 9, d = 12;
  const auto x = random_vector(n * d, 1, -2, 2), g = random_vector(d, 2, 0.5, 1.5),
             dl = random_vector(d, 3, -0.5, 0.5);
  const NormRef ref = ref_norm(x, g, dl, n, d, kEps);
  std::vector<double> y64;
  for (DType dt : {DType::F64, DType::F32}) {
    Strided sx = strided(*be, dt, n, d, 4, 2), sy = strided(*be, dt, n, d, 3, 3);
    write(*be, sx.view, x);
    Tensor rstd = be->alloc(dt, n, 1);
    be->wrmsnorm_fwd(sx.view, upload(*be, dt, 1, d, g), upload(*be, dt, 1, d, dl), kEps, sy.view,
                     rstd);
    const double tol = dt == DType::F64 ? 1e-14 : 2e-6;
    const auto y = read(*be, sy.view);
    expect_close(y, ref.y, tol, "wrmsnorm y");
    expect_close(read(*be, rstd), ref.rstd, tol, "wrmsnorm rstd");
    EXPECT_TRUE(outside_untouched(*be, sy, 3));
    if (dt == DType::F64) y64 = y;
    else expect_close(y, y64, 2e-6, "fp32 vs fp64");
  }
}

TEST(WRMSNorm, BackwardMatchesFiniteDifferences) {
  auto be = make_cpu_backend();
  const std::int64_t n = 6, d = 10;
  auto x = random_vector(n * d, 4, -2, 2), g = random_vector(d, 5, 0.5, 1.5),
       dl = random_vector(d, 6, -0.5, 0.5);
  const auto r = random_vector(n * d, 7);
  auto loss = [&] {
    Tensor y = be->alloc(DType::F64, n, d), rs = be->alloc(DType::F64, n, 1);
    be->wrmsnorm_fwd(upload(*be, DType::F64, n, d, x), upload(*be, DType::F64, 1, d, g),
                     upload(*be, DType::F64, 1, d, dl), kEps, y, rs);
    return weighted_sum(read(*be, y), r);
  };
  Tensor X = upload(*be, DType::F64, n, d, x), G = upload(*be, DType::F64, 1, d, g),
         DL = upload(*be, DType::F64, 1, d, dl);
  Tensor y = be->alloc(DType::F64, n, d), rs = be->alloc(DType::F64, n, 1);
  be->wrmsnorm_fwd(X, G, DL, kEps, y, rs);
  const auto dg0 = random_vector(d, 8), dd0 = random_vector(d, 9);
  Tensor dX = be->alloc(DType::F64, n, d), dG = upload(*be, DType::F64, 1, d, dg0),
         dD = upload(*be, DType::F64, 1, d, dd0);
  be->wrmsnorm_bwd(X, G, DL, rs, upload(*be, DType::F64, n, d, r), dX, false, dG, dD);
  auto dg = read(*be, dG), dd = read(*be, dD);
  for (std::int64_t j = 0; j < d; ++j) {
    dg[j] -= dg0[j];
    dd[j] -= dd0[j];
  }
  expect_grad("wrmsnorm", "dx", check_gradient(x, loss, read(*be, dX)));
  expect_grad("wrmsnorm", "dgamma", check_gradient(g, loss, dg));
  expect_grad("wrmsnorm", "ddelta", check_gradient(dl, loss, dd));
}

TEST(WRMSNorm, BackwardAccumulateAndStrided) {
  auto be = make_cpu_backend();
  const std::int64_t n = 5, d = 8;
  const auto x = random_vector(n * d, 10), g = random_vector(d, 11), dl = random_vector(d, 12);
  const auto dy = random_vector(n * d, 13), dx0 = random_vector(n * d, 14);
  std::vector<double> plain, param;
  for (bool strided_views : {false, true}) {
    Strided sx = strided(*be, DType::F64, n, d, strided_views ? 3 : 0, strided_views ? 1 : 0);
    Strided sdy = strided(*be, DType::F64, n, d, strided_views ? 2 : 0, strided_views ? 2 : 0);
    Strided sdx = strided(*be, DType::F64, n, d, strided_views ? 5 : 0, strided_views ? 4 : 0);
    write(*be, sx.view, x);
    write(*be, sdy.view, dy);
    Tensor G = upload(*be, DType::F64, 1, d, g), DL = upload(*be, DType::F64, 1, d, dl);
    Tensor y = be->alloc(DType::F64, n, d), rs = be->alloc(DType::F64, n, 1);
    be->wrmsnorm_fwd(sx.view, G, DL, kEps, y, rs);
    Tensor dG = be->alloc(DType::F64, 1, d), dD = be->alloc(DType::F64, 1, d);
    be->wrmsnorm_bwd(sx.view, G, DL, rs, sdy.view, sdx.view, false, dG, dD);
    const auto written = read(*be, sdx.view);
    write(*be, sdx.view, dx0);
    be->wrmsnorm_bwd(sx.view, G, DL, rs, sdy.view, sdx.view, true, dG, dD);
    const auto added = read(*be, sdx.view);
    for (std::size_t i = 0; i < added.size(); ++i)
      EXPECT_NEAR(added[i], dx0[i] + written[i], 1e-14);
    if (strided_views) {
      EXPECT_TRUE(outside_untouched(*be, sdx, 4));
    }
    // Two calls: parameter gradients are twice one call's.
    std::vector<double> p = read(*be, dG), pd = read(*be, dD);
    p.insert(p.end(), pd.begin(), pd.end());
    if (!strided_views) {
      plain = written;
      param = p;
    } else {
      EXPECT_EQ(written, plain);
      EXPECT_EQ(p, param);
    }
  }
}

TEST(WRMSNorm, DeterministicAcrossThreadCounts) {
  auto be = make_cpu_backend();
  const std::int64_t n = 517, d = 96;  // several row chunks
  const auto x = random_vector(n * d, 15), g = random_vector(d, 16), dl = random_vector(d, 17);
  const auto dy = random_vector(n * d, 18);
  for (DType dt : {DType::F64, DType::F32}) {
    std::vector<double> res[2];
    for (int threads : {1, 2})
      with_threads(threads, [&] {
        Tensor X = upload(*be, dt, n, d, x), G = upload(*be, dt, 1, d, g),
               DL = upload(*be, dt, 1, d, dl);
        Tensor y = be->alloc(dt, n, d), rs = be->alloc(dt, n, 1), dX = be->alloc(dt, n, d);
        Tensor dG = be->alloc(dt, 1, d), dD = be->alloc(dt, 1, d);
        be->wrmsnorm_fwd(X, G, DL, kEps, y, rs);
        be->wrmsnorm_bwd(X, G, DL, rs, upload(*be, dt, n, d, dy), dX, false, dG, dD);
        auto& r = res[threads - 1];
        for (const Tensor* t : {&y, &rs, &dX, &dG, &dD}) {
          const auto v = read(*be, *t);
          r.insert(r.end(), v.begin(), v.end());
        }
      });
    EXPECT_TRUE(bit_identical(res[0], res[1]));
  }
}

// An undefined δ is plain RMSNorm: the forward against the reference with
// δ = 0, bit-identical to a zero δ, and the backward against finite
// differences, with nothing else written.
TEST(WRMSNorm, WithoutDeltaIsPlainRmsNorm) {
  auto be = make_cpu_backend();
  const std::int64_t n = 7, d = 10;
  auto x = random_vector(n * d, 31, -2, 2), g = random_vector(d, 32, 0.5, 1.5);
  const std::vector<double> zero_delta(d, 0.0);
  const auto r = random_vector(n * d, 33);
  for (DType dt : {DType::F64, DType::F32}) {
    Tensor X = upload(*be, dt, n, d, x), G = upload(*be, dt, 1, d, g);
    Tensor y = be->alloc(dt, n, d), rs = be->alloc(dt, n, 1);
    be->wrmsnorm_fwd(X, G, Tensor{}, kEps, y, rs);
    const NormRef ref = ref_norm(x, g, zero_delta, n, d, kEps);
    const double tol = dt == DType::F64 ? 1e-14 : 2e-6;
    expect_close(read(*be, y), ref.y, tol, "rmsnorm y");
    expect_close(read(*be, rs), ref.rstd, tol, "rmsnorm rstd");
    // The same bits as an explicit zero shift, forward and backward.
    Tensor y0 = be->alloc(dt, n, d), rs0 = be->alloc(dt, n, 1);
    be->wrmsnorm_fwd(X, G, upload(*be, dt, 1, d, zero_delta), kEps, y0, rs0);
    EXPECT_TRUE(bit_identical(read(*be, y), read(*be, y0)));
    Tensor dX = be->alloc(dt, n, d), dG = be->alloc(dt, 1, d);
    Tensor dX0 = be->alloc(dt, n, d), dG0 = be->alloc(dt, 1, d), dD0 = be->alloc(dt, 1, d);
    be->wrmsnorm_bwd(X, G, Tensor{}, rs, upload(*be, dt, n, d, r), dX, false, dG, Tensor{});
    be->wrmsnorm_bwd(X, G, upload(*be, dt, 1, d, zero_delta), rs0, upload(*be, dt, n, d, r), dX0,
                     false, dG0, dD0);
    EXPECT_TRUE(bit_identical(read(*be, dX), read(*be, dX0)));
    EXPECT_TRUE(bit_identical(read(*be, dG), read(*be, dG0)));
  }
  auto loss = [&] {
    Tensor y = be->alloc(DType::F64, n, d), rs = be->alloc(DType::F64, n, 1);
    be->wrmsnorm_fwd(upload(*be, DType::F64, n, d, x), upload(*be, DType::F64, 1, d, g),
                     Tensor{}, kEps, y, rs);
    return weighted_sum(read(*be, y), r);
  };
  Tensor X = upload(*be, DType::F64, n, d, x), G = upload(*be, DType::F64, 1, d, g);
  Tensor y = be->alloc(DType::F64, n, d), rs = be->alloc(DType::F64, n, 1);
  be->wrmsnorm_fwd(X, G, Tensor{}, kEps, y, rs);
  Tensor dX = be->alloc(DType::F64, n, d), dG = be->alloc(DType::F64, 1, d);
  be->wrmsnorm_bwd(X, G, Tensor{}, rs, upload(*be, DType::F64, n, d, r), dX, false, dG, Tensor{});
  expect_grad("rmsnorm", "dx", check_gradient(x, loss, read(*be, dX)));
  expect_grad("rmsnorm", "dgamma", check_gradient(g, loss, read(*be, dG)));
  // δ and its gradient go together.
  EXPECT_THROW(be->wrmsnorm_bwd(X, G, Tensor{}, rs, dX, dX, false, dG, dG), Error);
}

TEST(WRMSNorm, ShapeErrors) {
  auto be = make_cpu_backend();
  Tensor x = be->alloc(DType::F32, 4, 6), y = be->alloc(DType::F32, 4, 6);
  Tensor g = be->alloc(DType::F32, 1, 6), rs = be->alloc(DType::F32, 4, 1);
  EXPECT_THROW(be->wrmsnorm_fwd(x, be->alloc(DType::F32, 1, 5), g, kEps, y, rs), Error);
  EXPECT_THROW(be->wrmsnorm_fwd(x, g, g, kEps, y, be->alloc(DType::F32, 4, 2)), Error);
  EXPECT_THROW(be->wrmsnorm_fwd(x, g, g, kEps, be->alloc(DType::F64, 4, 6), rs), Error);
}

}  // namespace
}  // namespace wiola::test
