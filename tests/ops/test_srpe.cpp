// SRPE: coefficient tables and srpe_fwd / srpe_bwd on rotate-half pairs.
#include "ops/srpe_table.hpp"
#include "op_test_util.hpp"

namespace wiola::test {
namespace {

constexpr int kHeads = 3, kDh = 8, kHalf = kDh / 2, kP = 40;

// y_j = x_j c − x_{j+h} s ; y_{j+h} = x_j s + x_{j+h} c  (transpose: s → −s)
std::vector<double> ref_srpe(const std::vector<double>& x, const std::vector<std::int32_t>& pos,
                             const std::vector<double>& c, const std::vector<double>& s,
                             bool transpose) {
  std::vector<double> y(x.size());
  const std::int64_t w = kHeads * kDh;
  for (std::size_t i = 0; i < pos.size(); ++i)
    for (int h = 0; h < kHeads; ++h)
      for (int j = 0; j < kHalf; ++j) {
        const double cj = c[pos[i] * kHalf + j], sj = (transpose ? -1 : 1) * s[pos[i] * kHalf + j];
        const double a = x[i * w + h * kDh + j], b = x[i * w + h * kDh + j + kHalf];
        y[i * w + h * kDh + j] = a * cj - b * sj;
        y[i * w + h * kDh + j + kHalf] = a * sj + b * cj;
      }
  return y;
}

const std::vector<std::int32_t> kPos = {0, 7, 39, 3, 3, 21};

TEST(SrpeTable, MatchesTheSpecFormulaInLongDouble) {
  const int P = 2048, dh = 64;
  const double theta0 = 10000, ks = 8, as = 0.1, fs = 0.01;
  std::vector<double> c, s;
  srpe_coefficients(P, dh, theta0, ks, as, fs, c, s);
  ASSERT_EQ(c.size(), static_cast<std::size_t>(P * dh / 2));
  ASSERT_EQ(s.size(), c.size());
  double worst = 0;
  for (int p : {0, 1, 2, 100, 1000, 2047})
    for (int j = 0; j < dh / 2; ++j) {
      const long double omega = std::pow(static_cast<long double>(theta0), -2.0L * j / dh);
      const long double angle = p * omega * (1.0L + 1.0L / ks);
      const long double r = 1.0L + as * std::sin(p * fs * omega);
      worst = std::max(worst, std::abs(c[p * dh / 2 + j] - static_cast<double>(r * std::cos(angle))));
      worst = std::max(worst, std::abs(s[p * dh / 2 + j] - static_cast<double>(r * std::sin(angle))));
    }
  EXPECT_LT(worst, 1e-12);
  for (int j = 0; j < dh / 2; ++j) {  // position 0: no rotation, unit radius
    EXPECT_EQ(c[j], 1.0);
    EXPECT_EQ(s[j], 0.0);
  }
  // Position 1, pair 0: ω = 1, Θ = 1.125, r = 1 + 0.1 sin(0.01).
  EXPECT_NEAR(c[dh / 2], (1 + 0.1 * std::sin(0.01)) * std::cos(1.125), 1e-15);
  EXPECT_THROW(srpe_coefficients(4, 7, theta0, ks, as, fs, c, s), Error);
}

TEST(Srpe, ForwardAndBackwardMatchReference) {
  auto be = make_cpu_backend();
  const auto n = static_cast<std::int64_t>(kPos.size());
  const std::int64_t w = kHeads * kDh;
  std::vector<double> c, s;
  srpe_coefficients(kP, kDh, 10000, 8, 0.1, 0.01, c, s);
  const auto x = random_vector(n * w, 1);
  std::vector<double> y64;
  for (DType dt : {DType::F64, DType::F32}) {
    const double tol = dt == DType::F64 ? 1e-15 : 1e-6;
    Tensor C = upload(*be, dt, kP, kHalf, c), S = upload(*be, dt, kP, kHalf, s);
    Tensor pos = upload_index(*be, kPos);
    // x is the K part of a fused [n, q | k | v] buffer; y a slice of another.
    Strided sx = strided(*be, dt, n, w, 2 * w, w), sy = strided(*be, dt, n, w, 3, 1);
    write(*be, sx.view, x);
    be->srpe_fwd(sx.view, pos, C, S, kDh, sy.view);
    const auto y = read(*be, sy.view);
    expect_close(y, ref_srpe(x, kPos, c, s, false), tol, "srpe_fwd");
    EXPECT_TRUE(outside_untouched(*be, sy, 1));
    be->srpe_fwd(sx.view, pos, C, S, kDh, sx.view);  // in place
    expect_close(read(*be, sx.view), y, 0, "srpe_fwd in place");
    EXPECT_TRUE(outside_untouched(*be, sx, w));
    write(*be, sx.view, x);
    be->srpe_bwd(sx.view, pos, C, S, kDh, sy.view);
    expect_close(read(*be, sy.view), ref_srpe(x, kPos, c, s, true), tol, "srpe_bwd");
    be->srpe_bwd(sx.view, pos, C, S, kDh, sx.view);
    expect_close(read(*be, sx.view), read(*be, sy.view), 0, "srpe_bwd in place");
    if (dt == DType::F64) y64 = y;
    else expect_close(y, y64, 1e-6, "fp32 vs fp64");
  }
}

TEST(Srpe, BackwardMatchesFiniteDifferences) {
  auto be = make_cpu_backend();
  const auto n = static_cast<std::int64_t>(kPos.size());
  const std::int64_t w = kHeads * kDh;
  // Arbitrary tables (not a rotation) so the adjoint is really tested.
  const auto c = random_vector(kP * kHalf, 2), s = random_vector(kP * kHalf, 3);
  auto x = random_vector(n * w, 4);
  const auto r = random_vector(n * w, 5);
  Tensor C = upload(*be, DType::F64, kP, kHalf, c), S = upload(*be, DType::F64, kP, kHalf, s);
  Tensor pos = upload_index(*be, kPos);
  auto loss = [&] {
    Tensor y = be->alloc(DType::F64, n, w);
    be->srpe_fwd(upload(*be, DType::F64, n, w, x), pos, C, S, kDh, y);
    return weighted_sum(read(*be, y), r);
  };
  Tensor dx = be->alloc(DType::F64, n, w);
  be->srpe_bwd(upload(*be, DType::F64, n, w, r), pos, C, S, kDh, dx);
  expect_grad("srpe", "dx", check_gradient(x, loss, read(*be, dx)));
}

TEST(Srpe, RejectsBadArguments) {
  auto be = make_cpu_backend();
  Tensor C = be->alloc(DType::F32, kP, kHalf), S = be->alloc(DType::F32, kP, kHalf);
  Tensor x = be->alloc(DType::F32, 2, kHeads * kDh);
  EXPECT_THROW(be->srpe_fwd(x, upload_index(*be, {0, kP}), C, S, kDh, x), Error);
  EXPECT_THROW(be->srpe_fwd(x, upload_index(*be, {0, 1}), C, S, 7, x), Error);
  EXPECT_THROW(be->srpe_fwd(x, upload_index(*be, {0, 1}), C, S, 5 * 2, x), Error);  // 24 % 10
  EXPECT_THROW(be->srpe_fwd(x, upload_index(*be, {0, 1}), C, be->alloc(DType::F32, kP, 3), kDh, x),
               Error);
}

TEST(Srpe, DeterministicAcrossThreadCounts) {
  auto be = make_cpu_backend();
  const std::int64_t n = 700, heads = 4, dh = 16, P = 800;
  std::vector<double> c, s;
  srpe_coefficients(static_cast<int>(P), dh, 10000, 8, 0.1, 0.01, c, s);
  std::vector<std::int32_t> pos(n);
  for (std::int64_t i = 0; i < n; ++i) pos[i] = static_cast<std::int32_t>((i * 7) % P);
  const auto x = random_vector(n * heads * dh, 6);
  for (DType dt : {DType::F64, DType::F32}) {
    std::vector<double> res[2];
    for (int threads : {1, 2})
      with_threads(threads, [&] {
        Tensor X = upload(*be, dt, n, heads * dh, x);
        Tensor C = upload(*be, dt, P, dh / 2, c), S = upload(*be, dt, P, dh / 2, s);
        Tensor I = upload_index(*be, pos);
        be->srpe_fwd(X, I, C, S, static_cast<int>(dh), X);
        be->srpe_bwd(X, I, C, S, static_cast<int>(dh), X);
        res[threads - 1] = read(*be, X);
      });
    EXPECT_TRUE(bit_identical(res[0], res[1]));
  }
}

}  // namespace
}  // namespace wiola::test
