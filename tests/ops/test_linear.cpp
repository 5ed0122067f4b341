// linear_fwd / linear_bwd_data / linear_bwd_weight: y = x·Wᵀ through BLAS.
#include <limits>

#include "op_test_util.hpp"

namespace wiola::test {
namespace {

// y[i, o] = Σ_k x[i, k] w[o, k]
std::vector<double> ref_linear(const std::vector<double>& x, const std::vector<double>& w,
                               std::int64_t n, std::int64_t in, std::int64_t out) {
  std::vector<double> y(static_cast<std::size_t>(n * out), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (std::int64_t k = 0; k < in; ++k) s += x[i * in + k] * w[o * in + k];
      y[i * out + o] = s;
    }
  return y;
}

constexpr std::int64_t N = 7, IN = 5, OUT = 6;

TEST(Linear, ForwardMatchesReferenceOnStridedViews) {
  auto be = make_cpu_backend();
  const auto x = random_vector(N * IN, 1), w = random_vector(OUT * IN, 2);
  const auto y0 = random_vector(N * OUT, 3);
  const auto ref = ref_linear(x, w, N, IN, OUT);
  for (DType dt : {DType::F64, DType::F32}) {
    const double tol = dt == DType::F64 ? 1e-14 : 1e-6;
    Strided sx = strided(*be, dt, N, IN, 3, 2), sw = strided(*be, dt, OUT, IN, 4, 4);
    Strided sy = strided(*be, dt, N, OUT, 2, 1);
    write(*be, sx.view, x);
    write(*be, sw.view, w);
    be->fill(sy.view, std::numeric_limits<double>::quiet_NaN());  // must be overwritten, not read
    be->linear_fwd(sx.view, sw.view, sy.view, false);
    expect_close(read(*be, sy.view), ref, tol, "linear_fwd");
    EXPECT_TRUE(outside_untouched(*be, sy, 1));

    write(*be, sy.view, y0);
    be->linear_fwd(sx.view, sw.view, sy.view, true);
    std::vector<double> acc(ref);
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += y0[i];
    expect_close(read(*be, sy.view), acc, tol, "linear_fwd accumulate");
    EXPECT_TRUE(outside_untouched(*be, sy, 1));
  }
}

TEST(Linear, BackwardMatchesFiniteDifferences) {
  auto be = make_cpu_backend();
  auto x = random_vector(N * IN, 4), w = random_vector(OUT * IN, 5);
  const auto r = random_vector(N * OUT, 6);
  auto loss = [&] {
    Tensor X = upload(*be, DType::F64, N, IN, x), W = upload(*be, DType::F64, OUT, IN, w);
    Tensor Y = be->alloc(DType::F64, N, OUT);
    be->linear_fwd(X, W, Y, false);
    return weighted_sum(read(*be, Y), r);
  };
  Tensor X = upload(*be, DType::F64, N, IN, x), W = upload(*be, DType::F64, OUT, IN, w);
  Tensor R = upload(*be, DType::F64, N, OUT, r);
  Tensor dX = be->alloc(DType::F64, N, IN);
  be->linear_bwd_data(R, W, dX, false);
  const auto dw0 = random_vector(OUT * IN, 7);  // parameter grads are added
  Tensor dW = upload(*be, DType::F64, OUT, IN, dw0);
  be->linear_bwd_weight(R, X, dW);
  std::vector<double> dw = read(*be, dW);
  for (std::size_t i = 0; i < dw.size(); ++i) dw[i] -= dw0[i];
  expect_grad("linear", "dx", check_gradient(x, loss, read(*be, dX)));
  expect_grad("linear", "dw", check_gradient(w, loss, dw));
}

TEST(Linear, BackwardStridedAndAccumulate) {
  auto be = make_cpu_backend();
  const auto x = random_vector(N * IN, 8), w = random_vector(OUT * IN, 9);
  const auto dy = random_vector(N * OUT, 10), dx0 = random_vector(N * IN, 11);
  // References: dx = dy·W, dw = dyᵀ·x.
  std::vector<double> dx_ref(N * IN, 0.0), dw_ref(OUT * IN, 0.0);
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t k = 0; k < IN; ++k)
      for (std::int64_t o = 0; o < OUT; ++o) {
        dx_ref[i * IN + k] += dy[i * OUT + o] * w[o * IN + k];
        dw_ref[o * IN + k] += dy[i * OUT + o] * x[i * IN + k];
      }
  for (DType dt : {DType::F64, DType::F32}) {
    const double tol = dt == DType::F64 ? 1e-14 : 1e-6;
    Strided sx = strided(*be, dt, N, IN, 2, 1), sdy = strided(*be, dt, N, OUT, 3, 3);
    Strided sdx = strided(*be, dt, N, IN, 5, 0), sdw = strided(*be, dt, OUT, IN, 1, 1);
    Tensor W = upload(*be, dt, OUT, IN, w);
    write(*be, sx.view, x);
    write(*be, sdy.view, dy);
    write(*be, sdx.view, dx0);
    be->linear_bwd_data(sdy.view, W, sdx.view, true);
    std::vector<double> acc(dx_ref);
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += dx0[i];
    expect_close(read(*be, sdx.view), acc, tol, "linear_bwd_data accumulate");
    be->linear_bwd_data(sdy.view, W, sdx.view, false);
    expect_close(read(*be, sdx.view), dx_ref, tol, "linear_bwd_data write");
    EXPECT_TRUE(outside_untouched(*be, sdx, 0));
    be->fill(sdw.view, 1.0);
    be->linear_bwd_weight(sdy.view, sx.view, sdw.view);
    std::vector<double> dw_plus(dw_ref);
    for (double& v : dw_plus) v += 1.0;
    expect_close(read(*be, sdw.view), dw_plus, tol, "linear_bwd_weight adds");
    EXPECT_TRUE(outside_untouched(*be, sdw, 1));
  }
}

TEST(Linear, Fp32AgreesWithFp64AndEmptyInnerDimension) {
  auto be = make_cpu_backend();
  const std::int64_t n = 33, in = 70, out = 41;
  const auto x = random_vector(n * in, 12), w = random_vector(out * in, 13);
  std::vector<double> y[2];
  int slot = 0;
  for (DType dt : {DType::F64, DType::F32}) {
    Tensor Y = be->alloc(dt, n, out);
    be->linear_fwd(upload(*be, dt, n, in, x), upload(*be, dt, out, in, w), Y, false);
    y[slot++] = read(*be, Y);
  }
  expect_close(y[1], y[0], 1e-5, "fp32 vs fp64");

  Tensor Y = upload(*be, DType::F64, 2, 3, random_vector(6, 14));
  be->linear_fwd(be->alloc(DType::F64, 2, 0), be->alloc(DType::F64, 3, 0), Y, false);
  for (double v : read(*be, Y)) EXPECT_EQ(v, 0.0);
}

TEST(Linear, ShapeErrorsNameTheOp) {
  auto be = make_cpu_backend();
  Tensor x = be->alloc(DType::F32, 4, 3), w = be->alloc(DType::F32, 5, 7);
  Tensor y = be->alloc(DType::F32, 4, 5);
  try {
    be->linear_fwd(x, w, y, false);
    FAIL() << "mismatched linear_fwd accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("linear_fwd"), std::string::npos) << m;
    EXPECT_NE(m.find("4x3"), std::string::npos) << m;
    EXPECT_NE(m.find("5x7"), std::string::npos) << m;
  }
  EXPECT_THROW(be->linear_bwd_data(y, w, x, false), Error);
  EXPECT_THROW(be->linear_bwd_weight(y, be->alloc(DType::F32, 3, 7), w), Error);
  EXPECT_THROW(be->linear_fwd(x, be->alloc(DType::F64, 5, 3), y, false), Error);
}

// A product is cut into pieces by its shape alone, each piece one
// single-threaded BLAS call over the whole inner dimension (ops/gemm.hpp), so
// the GEMMs give the same bits for any thread count, like every other op.
// Shapes: below the size that is cut, cut by rows, cut by columns.
TEST(Linear, BitIdenticalAcrossThreadCounts) {
  auto be = make_cpu_backend();
  struct Shape {
    std::int64_t n, in, out;
  };
  // Small products stay one call; the larger ones are cut into a grid fixed by
  // the shape, with pieces ending in remainders that are not multiples of 16
  // (1030 rows; 700 columns; the weight gradient 120 x 130 over K = 1000).
  // The cut must not depend on the thread count: under a kernel whose bits
  // depend on a call's extents (OPENBLAS_CORETYPE=Haswell on an AVX-512 CPU)
  // one piece per thread fails here; tests/run-all.sh runs it so.
  for (const Shape s : {Shape{20, 16, 12}, Shape{300, 80, 72}, Shape{40, 96, 700},
                        Shape{1030, 136, 200}, Shape{1000, 130, 120}}) {
    const auto x = random_vector(s.n * s.in, 15), w = random_vector(s.out * s.in, 16);
    const auto dy = random_vector(s.n * s.out, 17);
    for (DType dt : {DType::F64, DType::F32}) {
      auto run = [&](int threads) {
        std::vector<double> r;
        with_threads(threads, [&] {
          Tensor X = upload(*be, dt, s.n, s.in, x), W = upload(*be, dt, s.out, s.in, w);
          Tensor DY = upload(*be, dt, s.n, s.out, dy);
          Tensor Y = be->alloc(dt, s.n, s.out), DX = be->alloc(dt, s.n, s.in),
                 DW = be->alloc(dt, s.out, s.in);
          be->linear_fwd(X, W, Y, false);
          be->linear_bwd_data(DY, W, DX, false);
          be->linear_bwd_weight(DY, X, DW);
          for (const Tensor* t : {&Y, &DX, &DW}) {
            const auto v = read(*be, *t);
            r.insert(r.end(), v.begin(), v.end());
          }
        });
        return r;
      };
      const auto one = run(1);
      EXPECT_TRUE(bit_identical(one, run(2))) << s.n << "x" << s.in << "x" << s.out;
      EXPECT_TRUE(bit_identical(one, run(3))) << s.n << "x" << s.in << "x" << s.out;
      EXPECT_TRUE(bit_identical(one, run(4))) << s.n << "x" << s.in << "x" << s.out;
    }
  }
}

}  // namespace
}  // namespace wiola::test
