// cross_entropy_fwd / cross_entropy_bwd: per-row loss with ignored rows.
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

}  // namespace
}  // namespace wiola::test
