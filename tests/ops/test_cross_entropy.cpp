// cross_entropy_fwd / cross_entropy_bwd: per-row loss with ignored rows; and
// head_loss_fwd / head_loss_bwd, the tied-embedding logits with their loss.
#include "op_test_util.hpp"

namespace wiola::test {
namespace {

constexpr std::int64_t N = 6, V = 9;
const std::vector<std::int32_t> kTargets = {3, -1, 0, 8, -1, 5};

void ref_ce(const std::vector<double>& z, const std::vector<std::int32_t>& t,
            std::vector<double>& loss, std::vector<double>& lse) {
  const auto n = static_cast<std::int64_t>(t.size());
  const std::int64_t v = static_cast<std::int64_t>(z.size()) / n;
  loss.assign(n, 0.0);
  lse.assign(n, 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    double m = z[i * v];
    for (std::int64_t j = 1; j < v; ++j) m = std::max(m, z[i * v + j]);
    double s = 0;
    for (std::int64_t j = 0; j < v; ++j) s += std::exp(z[i * v + j] - m);
    lse[i] = m + std::log(s);
    loss[i] = t[i] < 0 ? 0.0 : lse[i] - z[i * v + t[i]];
  }
}

TEST(CrossEntropy, ForwardMatchesReferenceIncludingLargeLogits) {
  auto be = make_cpu_backend();
  auto z = random_vector(N * V, 1, -3, 3);
  for (std::int64_t j = 0; j < V; ++j) {
    z[2 * V + j] += 5000;          // exp(5000) overflows any float type
    z[3 * V + j] *= 120;           // spread ±360: exp(360) overflows fp32
  }
  std::vector<double> loss_ref, lse_ref;
  ref_ce(z, kTargets, loss_ref, lse_ref);
  for (DType dt : {DType::F64, DType::F32}) {
    Strided sz = strided(*be, dt, N, V, 4, 2);
    write(*be, sz.view, z);
    Tensor loss = be->alloc(dt, N, 1), lse = be->alloc(dt, N, 1);
    be->cross_entropy_fwd(sz.view, upload_index(*be, kTargets), loss, lse);
    const auto l = read(*be, loss), s = read(*be, lse);
    for (std::int64_t i = 0; i < N; ++i) {
      EXPECT_TRUE(std::isfinite(l[i]) && std::isfinite(s[i])) << "row " << i;
      // fp32 rounds logits of ~5000 to 2.4e-4 absolute.
      const double tol = dt == DType::F64 ? 1e-12 * std::max(1.0, std::abs(lse_ref[i]))
                                          : 1e-3 + 1e-6 * std::abs(lse_ref[i]);
      EXPECT_NEAR(s[i], lse_ref[i], tol) << "lse row " << i;
      EXPECT_NEAR(l[i], loss_ref[i], tol) << "loss row " << i;
    }
    EXPECT_EQ(l[1], 0.0);
    EXPECT_EQ(l[4], 0.0);
  }
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferences) {
  auto be = make_cpu_backend();
  auto z = random_vector(N * V, 2, -3, 3);
  const double scale = 0.37;
  Tensor tgt = upload_index(*be, kTargets);
  // L = scale · Σ_i loss_i, whose gradient cross_entropy_bwd gives directly.
  auto loss = [&] {
    Tensor l = be->alloc(DType::F64, N, 1), s = be->alloc(DType::F64, N, 1);
    be->cross_entropy_fwd(upload(*be, DType::F64, N, V, z), tgt, l, s);
    return scale * weighted_sum(read(*be, l), std::vector<double>(N, 1.0));
  };
  Tensor Z = upload(*be, DType::F64, N, V, z);
  Tensor l = be->alloc(DType::F64, N, 1), s = be->alloc(DType::F64, N, 1);
  be->cross_entropy_fwd(Z, tgt, l, s);
  Strided dz = strided(*be, DType::F64, N, V, 2, 1);
  be->cross_entropy_bwd(Z, tgt, s, scale, dz.view);
  EXPECT_TRUE(outside_untouched(*be, dz, 1));
  const auto g = read(*be, dz.view);
  for (std::int64_t j = 0; j < V; ++j) {  // ignored rows get zero gradient
    EXPECT_EQ(g[1 * V + j], 0.0);
    EXPECT_EQ(g[4 * V + j], 0.0);
  }
  expect_grad("cross_entropy", "dlogits", check_gradient(z, loss, g));

  be->cross_entropy_bwd(Z, tgt, s, scale, Z);  // in place
  EXPECT_EQ(read(*be, Z), g);
}

TEST(CrossEntropy, Fp32AgreesWithFp64) {
  auto be = make_cpu_backend();
  const std::int64_t n = 20, v = 1000;
  const auto z = random_vector(n * v, 3, -8, 8);
  std::vector<std::int32_t> t(n);
  for (std::int64_t i = 0; i < n; ++i) t[i] = static_cast<std::int32_t>((i * 37) % v);
  std::vector<double> res[2];
  int k = 0;
  for (DType dt : {DType::F64, DType::F32}) {
    Tensor Z = upload(*be, dt, n, v, z), T = upload_index(*be, t);
    Tensor l = be->alloc(dt, n, 1), s = be->alloc(dt, n, 1), dz = be->alloc(dt, n, v);
    be->cross_entropy_fwd(Z, T, l, s);
    be->cross_entropy_bwd(Z, T, s, 1.0, dz);
    res[k] = read(*be, l);
    const auto g = read(*be, dz);
    res[k].insert(res[k].end(), g.begin(), g.end());
    ++k;
  }
  expect_close(res[1], res[0], 1e-5, "fp32 vs fp64");
}

TEST(CrossEntropy, RejectsBadTargets) {
  auto be = make_cpu_backend();
  Tensor z = be->alloc(DType::F32, 2, V), l = be->alloc(DType::F32, 2, 1);
  EXPECT_THROW(be->cross_entropy_fwd(z, upload_index(*be, {0, static_cast<std::int32_t>(V)}), l, l),
               Error);
  EXPECT_THROW(be->cross_entropy_bwd(z, upload_index(*be, {-2, 0}), l, 1.0, z), Error);
  EXPECT_THROW(be->cross_entropy_fwd(z, upload_index(*be, {0}), l, l), Error);
}

TEST(CrossEntropy, DeterministicAcrossThreadCounts) {
  auto be = make_cpu_backend();
  const std::int64_t n = 64, v = 3000;
  const auto z = random_vector(n * v, 4, -6, 6);
  std::vector<std::int32_t> t(n);
  for (std::int64_t i = 0; i < n; ++i) t[i] = i % 5 == 0 ? -1 : static_cast<std::int32_t>((i * 91) % v);
  for (DType dt : {DType::F64, DType::F32}) {
    std::vector<double> res[2];
    for (int threads : {1, 2})
      with_threads(threads, [&] {
        Tensor Z = upload(*be, dt, n, v, z), T = upload_index(*be, t);
        Tensor l = be->alloc(dt, n, 1), s = be->alloc(dt, n, 1);
        be->cross_entropy_fwd(Z, T, l, s);
        be->cross_entropy_bwd(Z, T, s, 0.5, Z);
        auto& r = res[threads - 1];
        r = read(*be, l);
        const auto g = read(*be, Z);
        r.insert(r.end(), g.begin(), g.end());
      });
    EXPECT_TRUE(bit_identical(res[0], res[1]));
  }
}

// The head's op computes z = xf·embedᵀ itself: its loss and gradients are
// those of cross-entropy on z, differentiated through the product.
constexpr std::int64_t kD = 5;

TEST(HeadLoss, GradientsMatchFiniteDifferences) {
  auto be = make_cpu_backend();
  const DType dt = DType::F64;
  const auto xf = random_vector(N * kD, 5, -1, 1), embed = random_vector(V * kD, 6, -1, 1);
  const double scale = 0.37;
  const Tensor tgt = upload_index(*be, kTargets);
  auto loss_of = [&](const std::vector<double>& x, const std::vector<double>& e) {
    Tensor l = be->alloc(dt, N, 1), s = be->alloc(dt, N, 1);
    be->head_loss_fwd(upload(*be, dt, N, kD, x), upload(*be, dt, V, kD, e), tgt, l, s);
    return std::pair{read(*be, l), read(*be, s)};
  };
  std::vector<double> loss_ref, lse_ref, z(N * V, 0.0);
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t j = 0; j < V; ++j)
      for (std::int64_t c = 0; c < kD; ++c) z[i * V + j] += xf[i * kD + c] * embed[j * kD + c];
  ref_ce(z, kTargets, loss_ref, lse_ref);
  const auto [l, s] = loss_of(xf, embed);
  expect_close(l, loss_ref, 1e-12, "head_loss_fwd loss");
  expect_close(s, lse_ref, 1e-12, "head_loss_fwd lse");

  Tensor dxf = be->alloc(dt, N, kD), dembed = be->alloc(dt, V, kD);
  be->head_loss_bwd(upload(*be, dt, N, kD, xf), upload(*be, dt, V, kD, embed), tgt,
                    upload(*be, dt, N, 1, s), scale, dxf, dembed);
  std::vector<double> x = xf, e = embed;  // perturbed in place by the checks
  auto total = [&] {
    return scale * weighted_sum(loss_of(x, e).first, std::vector<double>(N, 1.0));
  };
  expect_grad("head_loss", "dxf", check_gradient(x, total, read(*be, dxf)));
  expect_grad("head_loss", "dembed", check_gradient(e, total, read(*be, dembed)));
}

// By default the op is the ops a stage runs without it, in their order: on
// the CPU, whose stage keeps its logits, the same bits either way; and the
// weight gradient is added to what dembed held.
TEST(HeadLoss, IsTheSeparateOpsBitForBit) {
  auto be = make_cpu_backend();
  const DType dt = DType::F32;
  const std::int64_t n = 40, v = 300, d = 24;
  std::vector<std::int32_t> t(n);
  for (std::int64_t i = 0; i < n; ++i)
    t[i] = i % 7 == 3 ? -1 : static_cast<std::int32_t>((i * 53) % v);
  const Tensor tgt = upload_index(*be, t), xf = upload(*be, dt, n, d, random_vector(n * d, 7));
  const Tensor embed = upload(*be, dt, v, d, random_vector(v * d, 8));
  const auto start = random_vector(v * d, 9), dx_start = random_vector(n * d, 10);

  Tensor l1 = be->alloc(dt, n, 1), s1 = be->alloc(dt, n, 1);
  // dxf is written (its start must not show), dembed added to.
  Tensor dx1 = upload(*be, dt, n, d, dx_start), de1 = upload(*be, dt, v, d, start);
  be->head_loss_fwd(xf, embed, tgt, l1, s1);
  be->head_loss_bwd(xf, embed, tgt, s1, 0.25, dx1, de1);

  Tensor l2 = be->alloc(dt, n, 1), s2 = be->alloc(dt, n, 1), z = be->alloc(dt, n, v);
  Tensor dx2 = be->alloc(dt, n, d), de2 = upload(*be, dt, v, d, start);
  be->linear_fwd(xf, embed, z, false);
  be->cross_entropy_fwd(z, tgt, l2, s2);
  be->cross_entropy_bwd(z, tgt, s2, 0.25, z);
  be->linear_bwd_weight(z, xf, de2);
  be->linear_bwd_data(z, embed, dx2, false);
  // The forward given the gradients' outputs: the same ops, in one call.
  Tensor l3 = be->alloc(dt, n, 1), s3 = be->alloc(dt, n, 1);
  Tensor dx3 = upload(*be, dt, n, d, dx_start), de3 = upload(*be, dt, v, d, start);
  be->head_loss_fwd(xf, embed, tgt, l3, s3, {0.25, dx3, de3});
  for (const auto& [a, b, what] :
       {std::tuple{l1, l2, "loss"}, {s1, s2, "lse"}, {dx1, dx2, "dxf"}, {de1, de2, "dembed"},
        {l3, l2, "loss (with gradients)"}, {s3, s2, "lse (with gradients)"},
        {dx3, dx2, "dxf (made by the forward)"}, {de3, de2, "dembed (made by the forward)"}})
    EXPECT_TRUE(bit_identical(read(*be, a), read(*be, b))) << what;
}

TEST(HeadLoss, RefusesInputsThatDoNotFit) {
  auto be = make_cpu_backend();
  const DType dt = DType::F32;
  const Tensor xf = be->alloc(dt, 4, 6), embed = be->alloc(dt, 9, 6), col = be->alloc(dt, 4, 1);
  const Tensor tgt = upload_index(*be, {0, 1, -1, 8});
  auto refused = [&](auto&& call, const std::string& says) {
    try {
      call();
      ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused([&] { be->head_loss_fwd(xf, be->alloc(dt, 9, 5), tgt, col, col); },
          "head_loss_fwd: xf is 4x6 but embed is 9x5");
  refused([&] { be->head_loss_fwd(xf, embed, upload_index(*be, {0, 1, 2}), col, col); },
          "head_loss_fwd: targets");
  // The values are the loss kernel's to check (a device reads them there).
  refused([&] { be->head_loss_fwd(xf, embed, upload_index(*be, {0, 1, 2, 9}), col, col); },
          "targets[3] = 9 is outside [-1, 9)");
  const Tensor dxf = be->alloc(dt, 4, 6), dembed = be->alloc(dt, 9, 6);
  refused([&] { be->head_loss_bwd(xf, embed, tgt, col, 1.0, be->alloc(dt, 4, 5), dembed); },
          "head_loss_bwd: dxf");
  refused([&] { be->head_loss_bwd(xf, embed, tgt, col, 1.0, dxf, be->alloc(dt, 6, 9)); },
          "head_loss_bwd: dembed");
}

}  // namespace
}  // namespace wiola::test
