// SRPE: coefficient tables and srpe_fwd / srpe_bwd on rotate-half pairs, and
// on interleaved pairs (Wiola 13M's spiral RoPE) with its tables.
#include "ops/spiral_rope_table.hpp"
#include "ops/srpe_table.hpp"
#include "op_test_util.hpp"

namespace wiola::test {
namespace {

constexpr int kHeads = 3, kDh = 8, kHalf = kDh / 2, kP = 40;

// y_a = x_a c − x_b s ; y_b = x_a s + x_b c  (transpose: s → −s), pair j being
// (a, b) = (j, j + dh/2), or (2j, 2j + 1) when interleaved.
std::vector<double> ref_srpe(const std::vector<double>& x, const std::vector<std::int32_t>& pos,
                             const std::vector<double>& c, const std::vector<double>& s,
                             bool transpose, RotaryPairs pairs = RotaryPairs::Half) {
  std::vector<double> y(x.size());
  const std::int64_t w = kHeads * kDh;
  const bool il = pairs == RotaryPairs::Interleaved;
  for (std::size_t i = 0; i < pos.size(); ++i)
    for (int h = 0; h < kHeads; ++h)
      for (int j = 0; j < kHalf; ++j) {
        const double cj = c[pos[i] * kHalf + j], sj = (transpose ? -1 : 1) * s[pos[i] * kHalf + j];
        const int ja = il ? 2 * j : j, jb = il ? 2 * j + 1 : j + kHalf;
        const double a = x[i * w + h * kDh + ja], b = x[i * w + h * kDh + jb];
        y[i * w + h * kDh + ja] = a * cj - b * sj;
        y[i * w + h * kDh + jb] = a * sj + b * cj;
      }
  return y;
}

const char* pairs_name(RotaryPairs p) {
  return p == RotaryPairs::Half ? "rotate-half" : "interleaved";
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
  for (RotaryPairs pairs : {RotaryPairs::Half, RotaryPairs::Interleaved}) {
    SCOPED_TRACE(pairs_name(pairs));
    std::vector<double> c, s;
    if (pairs == RotaryPairs::Half)
      srpe_coefficients(kP, kDh, 10000, 8, 0.1, 0.01, c, s);
    else
      spiral_rope_coefficients(kP, kDh, 10000, 0.05, c, s);
    const auto x = random_vector(n * w, 1);
    std::vector<double> y64;
    for (DType dt : {DType::F64, DType::F32}) {
      const double tol = dt == DType::F64 ? 1e-15 : 1e-6;
      Tensor C = upload(*be, dt, kP, kHalf, c), S = upload(*be, dt, kP, kHalf, s);
      Tensor pos = upload_index(*be, kPos);
      // x is the K part of a fused [n, q | k | v] buffer; y a slice of another.
      Strided sx = strided(*be, dt, n, w, 2 * w, w), sy = strided(*be, dt, n, w, 3, 1);
      write(*be, sx.view, x);
      be->srpe_fwd(sx.view, pos, C, S, kDh, pairs, sy.view);
      const auto y = read(*be, sy.view);
      expect_close(y, ref_srpe(x, kPos, c, s, false, pairs), tol, "srpe_fwd");
      EXPECT_TRUE(outside_untouched(*be, sy, 1));
      be->srpe_fwd(sx.view, pos, C, S, kDh, pairs, sx.view);  // in place
      expect_close(read(*be, sx.view), y, 0, "srpe_fwd in place");
      EXPECT_TRUE(outside_untouched(*be, sx, w));
      write(*be, sx.view, x);
      be->srpe_bwd(sx.view, pos, C, S, kDh, pairs, sy.view);
      expect_close(read(*be, sy.view), ref_srpe(x, kPos, c, s, true, pairs), tol, "srpe_bwd");
      be->srpe_bwd(sx.view, pos, C, S, kDh, pairs, sx.view);
      expect_close(read(*be, sx.view), read(*be, sy.view), 0, "srpe_bwd in place");
      if (dt == DType::F64) y64 = y;
      else expect_close(y, y64, 1e-6, "fp32 vs fp64");
    }
  }
}

// The two pairings differ (a map that ignored the flag would pass the
// reference comparison above for neither or both).
TEST(Srpe, PairingsDiffer) {
  auto be = make_cpu_backend();
  const auto n = static_cast<std::int64_t>(kPos.size());
  const std::int64_t w = kHeads * kDh;
  std::vector<double> c, s;
  spiral_rope_coefficients(kP, kDh, 10000, 0.05, c, s);
  const auto x = random_vector(n * w, 11);
  Tensor C = upload(*be, DType::F64, kP, kHalf, c), S = upload(*be, DType::F64, kP, kHalf, s);
  Tensor pos = upload_index(*be, kPos);
  Tensor a = be->alloc(DType::F64, n, w), b = be->alloc(DType::F64, n, w);
  be->srpe_fwd(upload(*be, DType::F64, n, w, x), pos, C, S, kDh, RotaryPairs::Half, a);
  be->srpe_fwd(upload(*be, DType::F64, n, w, x), pos, C, S, kDh, RotaryPairs::Interleaved, b);
  EXPECT_GT(max_abs_diff(read(*be, a), read(*be, b)), 1e-2);
}

TEST(SpiralRopeTable, MatchesTheSpecFormulaInLongDouble) {
  const int P = 512, dh = 32, half = dh / 2;
  const double base = 10000, alpha = 0.05;
  std::vector<double> c, s;
  spiral_rope_coefficients(P, dh, base, alpha, c, s);
  ASSERT_EQ(c.size(), static_cast<std::size_t>(P * half));
  double worst = 0;
  for (int m : {0, 1, 2, 100, 511})
    for (int i = 0; i < half; ++i) {
      const long double theta = std::pow(static_cast<long double>(base), -2.0L * i / dh);
      const long double phi = 1.0L + alpha * std::sqrt(i + 1.0L) / std::sqrt(half * 1.0L);
      const long double angle = m * theta * phi;
      worst = std::max(worst, std::abs(c[m * half + i] - static_cast<double>(std::cos(angle))));
      worst = std::max(worst, std::abs(s[m * half + i] - static_cast<double>(std::sin(angle))));
    }
  EXPECT_LT(worst, 1e-13);
  // The paper's figure 2: φ grows from about 1.0125 (i = 0) to 1 + α (i = dh/2 − 1).
  EXPECT_NEAR(std::atan2(s[half + 0], c[half + 0]), 1.0 + 0.05 / 4.0, 1e-15);
  // α = 0 is plain interleaved RoPE: angle m·base^(−2i/dh).
  spiral_rope_coefficients(P, dh, base, 0.0, c, s);
  EXPECT_NEAR(c[3 * half + 1], std::cos(3 * std::pow(base, -2.0 / dh)), 1e-15);
  EXPECT_THROW(spiral_rope_coefficients(4, 7, base, alpha, c, s), Error);
}

TEST(Srpe, BackwardMatchesFiniteDifferences) {
  for (RotaryPairs pairs : {RotaryPairs::Half, RotaryPairs::Interleaved}) {
    SCOPED_TRACE(pairs_name(pairs));
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
      be->srpe_fwd(upload(*be, DType::F64, n, w, x), pos, C, S, kDh, pairs, y);
      return weighted_sum(read(*be, y), r);
    };
    Tensor dx = be->alloc(DType::F64, n, w);
    be->srpe_bwd(upload(*be, DType::F64, n, w, r), pos, C, S, kDh, pairs, dx);
    expect_grad("srpe", std::string("dx (") + pairs_name(pairs) + ")",
                check_gradient(x, loss, read(*be, dx)));
  }
}

TEST(Srpe, RejectsBadArguments) {
  auto be = make_cpu_backend();
  Tensor C = be->alloc(DType::F32, kP, kHalf), S = be->alloc(DType::F32, kP, kHalf);
  Tensor x = be->alloc(DType::F32, 2, kHeads * kDh);
  const RotaryPairs half = RotaryPairs::Half;
  EXPECT_THROW(be->srpe_fwd(x, upload_index(*be, {0, kP}), C, S, kDh, half, x), Error);
  EXPECT_THROW(be->srpe_fwd(x, upload_index(*be, {0, 1}), C, S, 7, half, x), Error);
  EXPECT_THROW(be->srpe_fwd(x, upload_index(*be, {0, 1}), C, S, 5 * 2, half, x), Error);  // 24 % 10
  EXPECT_THROW(be->srpe_fwd(x, upload_index(*be, {0, 1}), C, be->alloc(DType::F32, kP, 3), kDh,
                            RotaryPairs::Interleaved, x),
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
        be->srpe_fwd(X, I, C, S, static_cast<int>(dh), RotaryPairs::Half, X);
        be->srpe_bwd(X, I, C, S, static_cast<int>(dh), RotaryPairs::Interleaved, X);
        res[threads - 1] = read(*be, X);
      });
    EXPECT_TRUE(bit_identical(res[0], res[1]));
  }
}

}  // namespace
}  // namespace wiola::test
