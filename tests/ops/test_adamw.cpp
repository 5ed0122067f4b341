// adamw_step against the update rule written out in double.
#include "op_test_util.hpp"

namespace wiola::test {
namespace {

void ref_adamw(const Backend::AdamW& h, std::vector<double>& p, const std::vector<double>& g,
               std::vector<double>& m, std::vector<double>& v) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double gi = g[i] * h.grad_scale;
    m[i] = h.beta1 * m[i] + (1 - h.beta1) * gi;
    v[i] = h.beta2 * v[i] + (1 - h.beta2) * gi * gi;
    const double mhat = m[i] / (1 - std::pow(h.beta1, h.step));
    const double vhat = v[i] / (1 - std::pow(h.beta2, h.step));
    p[i] -= h.lr * (mhat / (std::sqrt(vhat) + h.eps) + h.weight_decay * p[i]);
  }
}

TEST(AdamW, ThreeStepsMatchReference) {
  auto be = make_cpu_backend();
  const std::int64_t n = 37;
  for (DType dt : {DType::F64, DType::F32}) {
    std::vector<double> p = random_vector(n, 1), m(n, 0.0), v(n, 0.0);
    Tensor P = upload(*be, dt, 1, n, p), M = be->alloc(dt, 1, n), Vt = be->alloc(dt, 1, n);
    p = read(*be, P);
    for (long step = 1; step <= 3; ++step) {
      const Backend::AdamW h{3e-3, 0.9, 0.95, 1e-8, 0.1, 0.5, step};
      const auto g = random_vector(n, 10 + static_cast<std::uint64_t>(step), -2, 2);
      Tensor G = upload(*be, dt, 1, n, g);
      be->adamw_step(h, P, G, M, Vt);
      ref_adamw(h, p, read(*be, G), m, v);
    }
    const double tol = dt == DType::F64 ? 1e-15 : 1e-6;
    expect_close(read(*be, P), p, tol, "param");
    expect_close(read(*be, M), m, tol, "m");
    expect_close(read(*be, Vt), v, tol, "v");
  }
}

TEST(AdamW, NoDecayLeavesZeroGradientParamsAlone) {
  auto be = make_cpu_backend();
  const auto p = random_vector(8, 2);
  Tensor P = upload(*be, DType::F64, 2, 4, p);
  Tensor G = be->alloc(DType::F64, 2, 4), M = be->alloc(DType::F64, 2, 4),
         V = be->alloc(DType::F64, 2, 4);
  be->adamw_step({1e-2, 0.9, 0.95, 1e-8, 0.0, 1.0, 1}, P, G, M, V);
  EXPECT_EQ(read(*be, P), p);
}

TEST(AdamW, RejectsBadArguments) {
  auto be = make_cpu_backend();
  Tensor a = be->alloc(DType::F32, 1, 4), b = be->alloc(DType::F32, 1, 5);
  EXPECT_THROW(be->adamw_step({1e-3, 0.9, 0.95, 1e-8, 0.1, 1.0, 0}, a, a, a, a), Error);
  EXPECT_THROW(be->adamw_step({1e-3, 0.9, 0.95, 1e-8, 0.1, 1.0, 1}, a, b, a, a), Error);
}

TEST(AdamW, DeterministicAcrossThreadCounts) {
  auto be = make_cpu_backend();
  const std::int64_t n = 100000;
  const auto p = random_vector(n, 3), g = random_vector(n, 4);
  for (DType dt : {DType::F64, DType::F32}) {
    std::vector<double> res[2];
    for (int threads : {1, 2})
      with_threads(threads, [&] {
        Tensor P = upload(*be, dt, 1, n, p), G = upload(*be, dt, 1, n, g);
        Tensor M = be->alloc(dt, 1, n), V = be->alloc(dt, 1, n);
        be->adamw_step({1e-3, 0.9, 0.95, 1e-8, 0.1, 1.0, 1}, P, G, M, V);
        be->adamw_step({1e-3, 0.9, 0.95, 1e-8, 0.1, 1.0, 2}, P, G, M, V);
        res[threads - 1] = read(*be, P);
      });
    EXPECT_TRUE(bit_identical(res[0], res[1]));
  }
}

}  // namespace
}  // namespace wiola::test
