// ATM row maps: row_cosine_next, merge_rows_fwd / merge_rows_bwd.
#include "op_test_util.hpp"

namespace wiola::test {
namespace {

TEST(RowCosine, MatchesReferenceWithZeroRowsAndLastRow) {
  auto be = make_cpu_backend();
  const int B = 2, T = 5;
  const std::int64_t D = 4;
  auto x = random_vector(B * T * D, 1);
  for (std::int64_t c = 0; c < D; ++c) x[2 * D + c] = 0.0;                // row (0, 2) is zero
  for (std::int64_t c = 0; c < D; ++c) x[6 * D + c] = 3.0 * x[5 * D + c];  // parallel rows
  std::vector<double> ref(B * T);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const int i = b * T + t;
      if (t == T - 1) {
        ref[i] = -2;
        continue;
      }
      double ab = 0, aa = 0, bb = 0;
      for (std::int64_t c = 0; c < D; ++c) {
        ab += x[i * D + c] * x[(i + 1) * D + c];
        aa += x[i * D + c] * x[i * D + c];
        bb += x[(i + 1) * D + c] * x[(i + 1) * D + c];
      }
      ref[i] = aa == 0 || bb == 0 ? 0 : ab / std::sqrt(aa * bb);
    }
  for (DType dt : {DType::F64, DType::F32})
    for (DType rt : {DType::F64, DType::F32}) {
      Strided sx = strided(*be, dt, B * T, D, 3, 1);
      write(*be, sx.view, x);
      Tensor rho = be->alloc(rt, B * T, 1);
      be->row_cosine_next(sx.view, B, T, rho);
      const auto got = read(*be, rho);
      expect_close(got, ref, dt == DType::F64 && rt == DType::F64 ? 1e-15 : 1e-6, "rho");
      EXPECT_EQ(got[1], 0.0);
      EXPECT_EQ(got[2], 0.0);
      EXPECT_EQ(got[4], -2.0);
      EXPECT_EQ(got[9], -2.0);
      EXPECT_NEAR(got[5], 1.0, 1e-6);
    }
}

// A merge map and its unmerge (the ATM pattern): T = 6, pairs (0,1) and (3,4).
const std::vector<std::int32_t> kMergeA = {0, 2, 3, 5, -1};
const std::vector<std::int32_t> kMergeB = {1, -1, 4, -1, -1};
const std::vector<std::int32_t> kUnmergeA = {0, 0, 1, 2, 2, 3};
const std::vector<std::int32_t> kUnmergeB = {-1, -1, -1, -1, -1, -1};

std::vector<double> ref_merge(const std::vector<double>& src, const std::vector<std::int32_t>& ia,
                              const std::vector<std::int32_t>& ib, std::int64_t d) {
  std::vector<double> dst(ia.size() * d, 0.0);
  for (std::size_t r = 0; r < ia.size(); ++r) {
    if (ia[r] < 0) continue;
    for (std::int64_t c = 0; c < d; ++c)
      dst[r * d + c] = ib[r] < 0 ? src[ia[r] * d + c]
                                 : 0.5 * (src[ia[r] * d + c] + src[ib[r] * d + c]);
  }
  return dst;
}

struct MapCase {
  const char* name;
  const std::vector<std::int32_t>* a;
  const std::vector<std::int32_t>* b;
  std::int64_t src_rows;
};

const MapCase kCases[] = {{"merge", &kMergeA, &kMergeB, 6},
                          {"unmerge", &kUnmergeA, &kUnmergeB, 4}};

TEST(MergeRows, ForwardMatchesReference) {
  auto be = make_cpu_backend();
  const std::int64_t d = 5;
  for (const MapCase& mc : kCases) {
    const auto rows = static_cast<std::int64_t>(mc.a->size());
    const auto src = random_vector(mc.src_rows * d, 2);
    const auto ref = ref_merge(src, *mc.a, *mc.b, d);
    for (DType dt : {DType::F64, DType::F32}) {
      Strided ss = strided(*be, dt, mc.src_rows, d, 2, 1), sd = strided(*be, dt, rows, d, 3, 2);
      write(*be, ss.view, src);
      be->merge_rows_fwd(ss.view, upload_index(*be, *mc.a), upload_index(*be, *mc.b), sd.view);
      expect_close(read(*be, sd.view), ref, dt == DType::F64 ? 1e-15 : 1e-6, mc.name);
      EXPECT_TRUE(outside_untouched(*be, sd, 2));
    }
  }
}

TEST(MergeRows, BackwardMatchesFiniteDifferencesAndAdds) {
  auto be = make_cpu_backend();
  const std::int64_t d = 4;
  for (const MapCase& mc : kCases) {
    const auto rows = static_cast<std::int64_t>(mc.a->size());
    auto src = random_vector(mc.src_rows * d, 3);
    const auto r = random_vector(rows * d, 4);
    Tensor ia = upload_index(*be, *mc.a), ib = upload_index(*be, *mc.b);
    auto loss = [&] {
      Tensor dst = be->alloc(DType::F64, rows, d);
      be->merge_rows_fwd(upload(*be, DType::F64, mc.src_rows, d, src), ia, ib, dst);
      return weighted_sum(read(*be, dst), r);
    };
    const auto d0 = random_vector(mc.src_rows * d, 5);
    Strided sg = strided(*be, DType::F64, mc.src_rows, d, 2, 2);
    write(*be, sg.view, d0);
    be->merge_rows_bwd(upload(*be, DType::F64, rows, d, r), ia, ib, sg.view);
    EXPECT_TRUE(outside_untouched(*be, sg, 2));
    auto g = read(*be, sg.view);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] -= d0[i];
    expect_grad("merge_rows", std::string("dsrc (") + mc.name + ")", check_gradient(src, loss, g));
  }
}

TEST(MergeRows, RejectsBadMaps) {
  auto be = make_cpu_backend();
  Tensor src = be->alloc(DType::F32, 4, 3), dst = be->alloc(DType::F32, 2, 3);
  EXPECT_THROW(be->merge_rows_fwd(src, upload_index(*be, {0, 4}), upload_index(*be, {-1, -1}), dst),
               Error);
  EXPECT_THROW(be->merge_rows_fwd(src, upload_index(*be, {-1, 0}), upload_index(*be, {1, -1}), dst),
               Error);
  EXPECT_THROW(be->merge_rows_bwd(dst, upload_index(*be, {0, -2}), upload_index(*be, {-1, -1}), src),
               Error);
  EXPECT_THROW(be->merge_rows_fwd(src, upload_index(*be, {0}), upload_index(*be, {-1}), dst), Error);
}

TEST(MergeRows, DeterministicAcrossThreadCounts) {
  auto be = make_cpu_backend();
  const std::int64_t src_rows = 600, d = 128;
  // Unmerge-like: every source row feeds two or three destination rows.
  std::vector<std::int32_t> ia, ib;
  for (std::int64_t s = 0; s < src_rows; ++s)
    for (int k = 0; k < 2 + s % 2; ++k) {
      ia.push_back(static_cast<std::int32_t>(s));
      ib.push_back(k == 2 ? static_cast<std::int32_t>((s * 7) % src_rows) : -1);
    }
  const auto rows = static_cast<std::int64_t>(ia.size());
  const auto dd = random_vector(rows * d, 6), src = random_vector(src_rows * d, 7);
  for (DType dt : {DType::F64, DType::F32}) {
    std::vector<double> res[2];
    for (int threads : {1, 2})
      with_threads(threads, [&] {
        Tensor IA = upload_index(*be, ia), IB = upload_index(*be, ib);
        Tensor dst = be->alloc(dt, rows, d), dsrc = be->alloc(dt, src_rows, d);
        be->merge_rows_fwd(upload(*be, dt, src_rows, d, src), IA, IB, dst);
        be->merge_rows_bwd(upload(*be, dt, rows, d, dd), IA, IB, dsrc);
        auto& r = res[threads - 1];
        r = read(*be, dst);
        const auto v = read(*be, dsrc);
        r.insert(r.end(), v.begin(), v.end());
      });
    EXPECT_TRUE(bit_identical(res[0], res[1]));
  }
}

}  // namespace
}  // namespace wiola::test
