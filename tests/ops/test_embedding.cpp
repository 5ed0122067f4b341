// embedding_fwd / embedding_bwd: row lookup and its scatter-add.
#include "op_test_util.hpp"

namespace wiola::test {
namespace {

constexpr std::int64_t V = 6, D = 5;
const std::vector<std::int32_t> kTokens = {3, 0, 3, 5, 1, 3, 0};  // repeats hit one row

TEST(Embedding, ForwardMatchesReference) {
  auto be = make_cpu_backend();
  const auto table = random_vector(V * D, 1);
  const auto n = static_cast<std::int64_t>(kTokens.size());
  for (DType dt : {DType::F64, DType::F32}) {
    Strided out = strided(*be, dt, n, D, 3, 2);
    Tensor tab = upload(*be, dt, V, D, table);
    be->embedding_fwd(upload_index(*be, kTokens), tab, out.view);
    const auto got = read(*be, out.view);
    const auto stored = read(*be, tab);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t c = 0; c < D; ++c)
        EXPECT_EQ(got[i * D + c], stored[kTokens[i] * D + c]);
    EXPECT_TRUE(outside_untouched(*be, out, 2));
  }
}

TEST(Embedding, BackwardMatchesFiniteDifferencesAndAdds) {
  auto be = make_cpu_backend();
  auto table = random_vector(V * D, 2);
  const auto n = static_cast<std::int64_t>(kTokens.size());
  const auto r = random_vector(n * D, 3);
  auto loss = [&] {
    Tensor out = be->alloc(DType::F64, n, D);
    be->embedding_fwd(upload_index(*be, kTokens), upload(*be, DType::F64, V, D, table), out);
    return weighted_sum(read(*be, out), r);
  };
  const auto d0 = random_vector(V * D, 4);
  Tensor dtab = upload(*be, DType::F64, V, D, d0);
  be->embedding_bwd(upload_index(*be, kTokens), upload(*be, DType::F64, n, D, r), dtab);
  auto g = read(*be, dtab);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] -= d0[i];
  expect_grad("embedding", "dtable", check_gradient(table, loss, g));
}

TEST(Embedding, StridedGradientAndFp32) {
  auto be = make_cpu_backend();
  const auto n = static_cast<std::int64_t>(kTokens.size());
  const auto dout = random_vector(n * D, 5);
  std::vector<double> ref(V * D, 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < D; ++c) ref[kTokens[i] * D + c] += dout[i * D + c];
  for (DType dt : {DType::F64, DType::F32}) {
    Strided sd = strided(*be, dt, n, D, 2, 1), st = strided(*be, dt, V, D, 4, 3, 0.0);
    write(*be, sd.view, dout);
    be->embedding_bwd(upload_index(*be, kTokens), sd.view, st.view);
    expect_close(read(*be, st.view), ref, dt == DType::F64 ? 1e-15 : 1e-6, "embedding_bwd");
    EXPECT_TRUE(outside_untouched(*be, st, 3, 0.0));
  }
}

TEST(Embedding, RejectsOutOfRangeTokens) {
  auto be = make_cpu_backend();
  Tensor tab = be->alloc(DType::F32, V, D), out = be->alloc(DType::F32, 2, D);
  EXPECT_THROW(be->embedding_fwd(upload_index(*be, {0, static_cast<std::int32_t>(V)}), tab, out),
               Error);
  EXPECT_THROW(be->embedding_bwd(upload_index(*be, {-1, 0}), out, tab), Error);
  EXPECT_THROW(be->embedding_fwd(upload_index(*be, {0, 1, 2}), tab, out), Error);
}

TEST(Embedding, DeterministicAcrossThreadCounts) {
  auto be = make_cpu_backend();
  const std::int64_t n = 3000, v = 40, d = 64;  // many rows per token
  std::vector<std::int32_t> tok(n);
  const auto u = random_vector(n, 6, 0, static_cast<double>(v));
  for (std::int64_t i = 0; i < n; ++i) tok[i] = static_cast<std::int32_t>(u[i]);
  const auto dout = random_vector(n * d, 7);
  for (DType dt : {DType::F64, DType::F32}) {
    std::vector<double> res[2];
    for (int threads : {1, 2})
      with_threads(threads, [&] {
        Tensor dtab = be->alloc(dt, v, d);
        be->embedding_bwd(upload_index(*be, tok), upload(*be, dt, n, d, dout), dtab);
        res[threads - 1] = read(*be, dtab);
      });
    EXPECT_TRUE(bit_identical(res[0], res[1]));
  }
}

}  // namespace
}  // namespace wiola::test
