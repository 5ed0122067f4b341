// sigmoid_mul, silu_mul, gelu (exact erf) and the DSFF fusion, forward and
// backward, on strided views (fusion's a and b are the two halves of one
// [N, 2d] buffer, as the DSFF lays them out).
#include "op_test_util.hpp"

namespace wiola::test {
namespace {

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

constexpr std::int64_t N = 5, C = 7;

// Forward of one activation op on fp64 host vectors through the backend.
using Fwd2 = void (Backend::*)(const Tensor&, const Tensor&, const Tensor&);

std::vector<double> run2(Backend& be, Fwd2 f, DType dt, const std::vector<double>& a,
                         const std::vector<double>& b) {
  Tensor y = be.alloc(dt, N, C);
  (be.*f)(upload(be, dt, N, C, a), upload(be, dt, N, C, b), y);
  return read(be, y);
}

TEST(Activations, SigmoidMulForwardBackward) {
  auto be = make_cpu_backend();
  auto g = random_vector(N * C, 1, -4, 4), x = random_vector(N * C, 2);
  g[0] = 800;  // σ saturates without overflow
  g[1] = -800;
  const auto r = random_vector(N * C, 3);
  std::vector<double> ref(N * C);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = sig(g[i]) * x[i];
  const auto y64 = run2(*be, &Backend::sigmoid_mul_fwd, DType::F64, g, x);
  expect_close(y64, ref, 1e-15, "sigmoid_mul");
  expect_close(run2(*be, &Backend::sigmoid_mul_fwd, DType::F32, g, x), y64, 1e-6, "fp32");
  for (double v : y64) EXPECT_TRUE(std::isfinite(v));

  g[0] = 3;  // keep finite differences away from the saturated tails
  g[1] = -3;
  auto loss = [&] { return weighted_sum(run2(*be, &Backend::sigmoid_mul_fwd, DType::F64, g, x), r); };
  Tensor dg = be->alloc(DType::F64, N, C), dx = be->alloc(DType::F64, N, C);
  be->sigmoid_mul_bwd(upload(*be, DType::F64, N, C, g), upload(*be, DType::F64, N, C, x),
                      upload(*be, DType::F64, N, C, r), dg, dx);
  expect_grad("sigmoid_mul", "dg", check_gradient(g, loss, read(*be, dg)));
  expect_grad("sigmoid_mul", "dx", check_gradient(x, loss, read(*be, dx)));
}

TEST(Activations, SiluMulForwardBackward) {
  auto be = make_cpu_backend();
  auto g = random_vector(N * C, 4, -5, 5), u = random_vector(N * C, 5);
  const auto r = random_vector(N * C, 6);
  std::vector<double> ref(N * C);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = g[i] * sig(g[i]) * u[i];
  const auto y64 = run2(*be, &Backend::silu_mul_fwd, DType::F64, g, u);
  expect_close(y64, ref, 1e-15, "silu_mul");
  expect_close(run2(*be, &Backend::silu_mul_fwd, DType::F32, g, u), y64, 1e-6, "fp32");
  auto loss = [&] { return weighted_sum(run2(*be, &Backend::silu_mul_fwd, DType::F64, g, u), r); };
  Tensor dg = be->alloc(DType::F64, N, C), du = be->alloc(DType::F64, N, C);
  be->silu_mul_bwd(upload(*be, DType::F64, N, C, g), upload(*be, DType::F64, N, C, u),
                   upload(*be, DType::F64, N, C, r), dg, du);
  expect_grad("silu_mul", "dg", check_gradient(g, loss, read(*be, dg)));
  expect_grad("silu_mul", "du", check_gradient(u, loss, read(*be, du)));
}

TEST(Activations, GeluForwardBackward) {
  auto be = make_cpu_backend();
  auto x = random_vector(N * C, 7, -5, 5);
  x[0] = 40;
  x[1] = -40;
  const auto r = random_vector(N * C, 8);
  std::vector<double> ref(N * C);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = gelu(x[i]);
  auto fwd = [&](DType dt) {
    Tensor y = be->alloc(dt, N, C);
    be->gelu_fwd(upload(*be, dt, N, C, x), y);
    return read(*be, y);
  };
  const auto y64 = fwd(DType::F64);
  expect_close(y64, ref, 1e-15, "gelu");
  EXPECT_EQ(y64[0], 40.0);
  EXPECT_EQ(y64[1], 0.0);
  expect_close(fwd(DType::F32), y64, 1e-6, "fp32");
  // Exact erf, not the tanh approximation: they differ by ~1e-4 near x = 1.5.
  x[2] = 1.5;
  EXPECT_NEAR(fwd(DType::F64)[2], 1.5 * 0.5 * (1 + std::erf(1.5 / std::sqrt(2.0))), 1e-15);

  auto loss = [&] { return weighted_sum(fwd(DType::F64), r); };
  Tensor dx = be->alloc(DType::F64, N, C);
  be->gelu_bwd(upload(*be, DType::F64, N, C, x), upload(*be, DType::F64, N, C, r), dx);
  expect_grad("gelu", "dx", check_gradient(x, loss, read(*be, dx)));
}

TEST(Activations, FusionOnHalvesOfOneBuffer) {
  auto be = make_cpu_backend();
  auto logits = random_vector(N * C, 9, -4, 4), a = random_vector(N * C, 10),
       b = random_vector(N * C, 11);
  const auto r = random_vector(N * C, 12);
  std::vector<double> ref(N * C);
  for (std::size_t i = 0; i < ref.size(); ++i)
    ref[i] = sig(logits[i]) * a[i] + (1 - sig(logits[i])) * b[i];
  // a | b side by side in one [N, 2C] buffer.
  auto fwd = [&](DType dt) {
    Tensor ab = be->alloc(dt, N, 2 * C);
    write(*be, ab.cols_slice(0, C), a);
    write(*be, ab.cols_slice(C, 2 * C), b);
    Tensor out = be->alloc(dt, N, C);
    be->fusion_fwd(upload(*be, dt, N, C, logits), ab.cols_slice(0, C), ab.cols_slice(C, 2 * C), out);
    return read(*be, out);
  };
  const auto y64 = fwd(DType::F64);
  expect_close(y64, ref, 1e-15, "fusion");
  expect_close(fwd(DType::F32), y64, 1e-6, "fp32");

  auto loss = [&] { return weighted_sum(fwd(DType::F64), r); };
  Tensor ab = be->alloc(DType::F64, N, 2 * C);
  write(*be, ab.cols_slice(0, C), a);
  write(*be, ab.cols_slice(C, 2 * C), b);
  Tensor dab = be->alloc(DType::F64, N, 2 * C);  // da | db, again one buffer
  Tensor dl = be->alloc(DType::F64, N, C);
  be->fusion_bwd(upload(*be, DType::F64, N, C, logits), ab.cols_slice(0, C),
                 ab.cols_slice(C, 2 * C), upload(*be, DType::F64, N, C, r), dl,
                 dab.cols_slice(0, C), dab.cols_slice(C, 2 * C));
  expect_grad("fusion", "dlogits", check_gradient(logits, loss, read(*be, dl)));
  expect_grad("fusion", "da", check_gradient(a, loss, read(*be, dab.cols_slice(0, C))));
  expect_grad("fusion", "db", check_gradient(b, loss, read(*be, dab.cols_slice(C, 2 * C))));
}

TEST(Activations, StridedViewsMatchContiguous) {
  auto be = make_cpu_backend();
  const auto g = random_vector(N * C, 13, -3, 3), x = random_vector(N * C, 14),
             dy = random_vector(N * C, 15);
  Tensor G = upload(*be, DType::F64, N, C, g), X = upload(*be, DType::F64, N, C, x),
         DY = upload(*be, DType::F64, N, C, dy);
  Strided sg = strided(*be, DType::F64, N, C, 3, 1), sx = strided(*be, DType::F64, N, C, 2, 2),
          sdy = strided(*be, DType::F64, N, C, 1, 0);
  write(*be, sg.view, g);
  write(*be, sx.view, x);
  write(*be, sdy.view, dy);
  using Bwd2 = void (Backend::*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                 const Tensor&);
  const std::pair<Fwd2, Bwd2> ops[] = {{&Backend::sigmoid_mul_fwd, &Backend::sigmoid_mul_bwd},
                                       {&Backend::silu_mul_fwd, &Backend::silu_mul_bwd}};
  for (const auto& [fwd, bwd] : ops) {
    Tensor y = be->alloc(DType::F64, N, C), d1 = be->alloc(DType::F64, N, C),
           d2 = be->alloc(DType::F64, N, C);
    (be.get()->*fwd)(G, X, y);
    (be.get()->*bwd)(G, X, DY, d1, d2);
    Strided sy = strided(*be, DType::F64, N, C, 4, 3), s1 = strided(*be, DType::F64, N, C, 1, 1),
            s2 = strided(*be, DType::F64, N, C, 2, 0);
    (be.get()->*fwd)(sg.view, sx.view, sy.view);
    (be.get()->*bwd)(sg.view, sx.view, sdy.view, s1.view, s2.view);
    EXPECT_EQ(read(*be, sy.view), read(*be, y));
    EXPECT_EQ(read(*be, s1.view), read(*be, d1));
    EXPECT_EQ(read(*be, s2.view), read(*be, d2));
    EXPECT_TRUE(outside_untouched(*be, sy, 3));
    EXPECT_TRUE(outside_untouched(*be, s1, 1));
    EXPECT_TRUE(outside_untouched(*be, s2, 0));
  }
  Strided sy = strided(*be, DType::F64, N, C, 4, 3), sd = strided(*be, DType::F64, N, C, 4, 1);
  Tensor y = be->alloc(DType::F64, N, C), d = be->alloc(DType::F64, N, C);
  be->gelu_fwd(G, y);
  be->gelu_fwd(sg.view, sy.view);
  be->gelu_bwd(G, DY, d);
  be->gelu_bwd(sg.view, sdy.view, sd.view);
  EXPECT_EQ(read(*be, sy.view), read(*be, y));
  EXPECT_EQ(read(*be, sd.view), read(*be, d));
  EXPECT_TRUE(outside_untouched(*be, sy, 3));
}

// The DSFF's two activations as one op: by default (the CPU) silu_mul and
// gelu, so the same bits; branches of other rows or dtypes refused by name.
TEST(Activations, DsffActivationsAreSiluMulAndGelu) {
  auto be = make_cpu_backend();
  const std::int64_t cb = 3 * C;
  for (DType dt : {DType::F64, DType::F32}) {
    const Tensor gu = upload(*be, dt, N, 2 * C, random_vector(N * 2 * C, 30, -4, 4));
    const Tensor ga = gu.cols_slice(0, C), ua = gu.cols_slice(C, 2 * C);
    const Tensor ub = upload(*be, dt, N, cb, random_vector(N * cb, 31, -3, 3));
    const Tensor dha = upload(*be, dt, N, C, random_vector(N * C, 32));
    const Tensor dhb = upload(*be, dt, N, cb, random_vector(N * cb, 33));
    Tensor ha = be->alloc(dt, N, C), hb = be->alloc(dt, N, cb), ha2 = be->alloc(dt, N, C),
           hb2 = be->alloc(dt, N, cb);
    be->dsff_act_fwd(ga, ua, ub, ha, hb);
    be->silu_mul_fwd(ga, ua, ha2);
    be->gelu_fwd(ub, hb2);
    EXPECT_EQ(read(*be, ha), read(*be, ha2));
    EXPECT_EQ(read(*be, hb), read(*be, hb2));
    Tensor dga = be->alloc(dt, N, C), dua = be->alloc(dt, N, C), dub = be->alloc(dt, N, cb);
    Tensor dga2 = be->alloc(dt, N, C), dua2 = be->alloc(dt, N, C), dub2 = be->alloc(dt, N, cb);
    be->dsff_act_bwd(ga, ua, dha, ub, dhb, dga, dua, dub);
    be->silu_mul_bwd(ga, ua, dha, dga2, dua2);
    be->gelu_bwd(ub, dhb, dub2);
    EXPECT_EQ(read(*be, dga), read(*be, dga2));
    EXPECT_EQ(read(*be, dua), read(*be, dua2));
    EXPECT_EQ(read(*be, dub), read(*be, dub2));
  }
  const Tensor a = be->alloc(DType::F32, N, C), b = be->alloc(DType::F32, N + 1, C);
  const Tensor b64 = be->alloc(DType::F64, N, C);
  for (const Tensor* other : {&b, &b64}) {
    try {
      be->dsff_act_fwd(a, a, *other, a, *other);
      ADD_FAILURE() << "a branch of other rows or dtype accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("dsff_act_fwd: ub is"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Activations, ShapeErrors) {
  auto be = make_cpu_backend();
  Tensor a = be->alloc(DType::F32, 3, 4), b = be->alloc(DType::F32, 3, 5);
  EXPECT_THROW(be->sigmoid_mul_fwd(a, b, a), Error);
  EXPECT_THROW(be->gelu_fwd(a, be->alloc(DType::F64, 3, 4)), Error);
  EXPECT_THROW(be->fusion_fwd(a, a, b, a), Error);
}

TEST(Activations, DeterministicAcrossThreadCounts) {
  auto be = make_cpu_backend();
  const std::int64_t n = 130, c = 600;
  const auto l = random_vector(n * c, 16, -3, 3), a = random_vector(n * c, 17),
             b = random_vector(n * c, 18), d = random_vector(n * c, 19);
  for (DType dt : {DType::F64, DType::F32}) {
    std::vector<double> res[2];
    for (int threads : {1, 2})
      with_threads(threads, [&] {
        Tensor L = upload(*be, dt, n, c, l), A = upload(*be, dt, n, c, a),
               B = upload(*be, dt, n, c, b), D = upload(*be, dt, n, c, d);
        Tensor o1 = be->alloc(dt, n, c), o2 = be->alloc(dt, n, c), o3 = be->alloc(dt, n, c);
        be->fusion_fwd(L, A, B, o1);
        be->fusion_bwd(L, A, B, D, o1, o2, o3);
        be->silu_mul_bwd(A, B, D, A, B);
        be->gelu_bwd(L, D, L);
        auto& r = res[threads - 1];
        for (const Tensor* t : {&o1, &o2, &o3, &A, &B, &L}) {
          const auto v = read(*be, *t);
          r.insert(r.end(), v.begin(), v.end());
        }
      });
    EXPECT_TRUE(bit_identical(res[0], res[1]));
  }
}

}  // namespace
}  // namespace wiola::test
