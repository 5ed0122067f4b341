// Memory and elementwise ops of the CPU backend: alloc, fill, copy, convert,
// host transfers, add, axpy, scale, sum_squares.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "op_test_util.hpp"

namespace wiola::test {
namespace {

TEST(CpuMemory, AllocIsZeroedAlignedAndShaped) {
  auto be = make_cpu_backend();
  EXPECT_EQ(be->device(), Device::CPU);
  for (DType dt : {DType::F32, DType::F64, DType::I32}) {
    Tensor t = be->alloc(dt, 5, 7);
    EXPECT_EQ(t.rows(), 5);
    EXPECT_EQ(t.cols(), 7);
    EXPECT_EQ(t.ld(), 7);
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data()) % 64, 0u);
    for (double v : read(*be, t)) EXPECT_EQ(v, 0.0);
  }
  Tensor empty = be->alloc(DType::F32, 0, 3);
  EXPECT_TRUE(empty.defined());
  EXPECT_EQ(empty.numel(), 0);
}

// The suite runs with WIOLA_POISON_UNINIT=1 (tests/CMakeLists.txt), so the
// model's not-zero-filled outputs start as NaN in every test: an op that
// leaves part of one unwritten shows up as NaN instead of passing by luck.
TEST(CpuMemory, AllocUninitIsPoisonedUnderTheSuite) {
  auto be = make_cpu_backend();
  const char* poison = std::getenv("WIOLA_POISON_UNINIT");
  ASSERT_TRUE(poison != nullptr && std::string(poison) == "1")
      << "the test environment lost WIOLA_POISON_UNINIT=1";
  for (DType dt : {DType::F32, DType::F64}) {
    Tensor t = be->alloc_uninit(dt, 3, 5);
    EXPECT_EQ(t.rows(), 3);
    EXPECT_EQ(t.cols(), 5);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data()) % 64, 0u);
    for (double v : read(*be, t)) EXPECT_TRUE(std::isnan(v)) << v;
  }
  for (double v : read(*be, be->alloc_uninit(DType::I32, 2, 2))) EXPECT_EQ(v, -1.0);
  EXPECT_THROW(be->alloc_uninit(DType::F32, -1, 2), Error);
}

TEST(CpuMemory, RejectsBf16AndBadShapes) {
  auto be = make_cpu_backend();
  try {
    be->alloc(DType::BF16, 2, 2);
    FAIL() << "bf16 alloc did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bf16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(be->alloc(DType::F32, -1, 2), Error);
}

TEST(CpuMemory, HostRoundTripAndStridedRejection) {
  auto be = make_cpu_backend();
  const std::vector<double> v = random_vector(12, 1);
  Tensor t = upload(*be, DType::F64, 3, 4, v);
  std::vector<double> back(12);
  be->to_host(t, back.data());
  EXPECT_EQ(back, v);
  Tensor slice = t.cols_slice(1, 3);
  EXPECT_THROW(be->to_host(slice, back.data()), Error);
  EXPECT_THROW(be->from_host(back.data(), slice), Error);
}

TEST(CpuMemory, FillTouchesOnlyTheView) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::F32, DType::F64, DType::I32}) {
    Strided s = strided(*be, dt, 4, 3, 5, 2);
    be->fill(s.view, -3.0);
    for (double x : read(*be, s.view)) EXPECT_EQ(x, -3.0);
    EXPECT_TRUE(outside_untouched(*be, s, 2));
  }
  Tensor i = be->alloc(DType::I32, 2, 1);
  EXPECT_THROW(be->fill(i, 0.5), Error);
}

TEST(CpuMemory, CopyAndConvertStrided) {
  auto be = make_cpu_backend();
  const std::vector<double> v = random_vector(6 * 5, 2, -100, 100);
  Tensor src = upload(*be, DType::F64, 6, 5, v);
  Strided dst = strided(*be, DType::F64, 6, 5, 3, 1);
  be->copy(src, dst.view);
  EXPECT_EQ(read(*be, dst.view), v);
  EXPECT_TRUE(outside_untouched(*be, dst, 1));

  Strided f = strided(*be, DType::F32, 6, 5, 2, 2);
  be->convert(dst.view, f.view);
  const std::vector<double> fv = read(*be, f.view);
  for (std::size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(fv[i], static_cast<double>(static_cast<float>(v[i])));
  EXPECT_TRUE(outside_untouched(*be, f, 2));
  Tensor back = be->alloc(DType::F64, 6, 5);
  be->convert(f.view, back);
  EXPECT_EQ(read(*be, back), fv);

  EXPECT_THROW(be->copy(src, f.view), Error);                        // dtype differs
  EXPECT_THROW(be->copy(src, be->alloc(DType::F64, 5, 6)), Error);   // shape differs
}

TEST(CpuElementwise, AddAxpyScaleMatchReference) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::F64, DType::F32}) {
    const std::int64_t n = 9, c = 13;
    const auto a = random_vector(n * c, 3), b = random_vector(n * c, 4);
    Strided sa = strided(*be, dt, n, c, 4, 3), sb = strided(*be, dt, n, c, 1, 0);
    write(*be, sa.view, a);
    write(*be, sb.view, b);
    const double tol = dt == DType::F64 ? 1e-15 : 1e-6;
    std::vector<double> ref(a.size());

    Strided out = strided(*be, dt, n, c, 2, 1);
    be->add(sa.view, sb.view, out.view);
    for (std::size_t i = 0; i < a.size(); ++i) ref[i] = a[i] + b[i];
    expect_close(read(*be, out.view), ref, tol, "add");
    EXPECT_TRUE(outside_untouched(*be, out, 1));
    be->add(sa.view, sb.view, sa.view);  // in place
    expect_close(read(*be, sa.view), ref, tol, "add in place");
    EXPECT_TRUE(outside_untouched(*be, sa, 3));

    write(*be, sa.view, a);
    be->axpy(-0.75, sa.view, sb.view);
    for (std::size_t i = 0; i < a.size(); ++i) ref[i] = b[i] - 0.75 * a[i];
    expect_close(read(*be, sb.view), ref, tol, "axpy");
    EXPECT_TRUE(outside_untouched(*be, sb, 0));

    be->scale(sa.view, 2.5);
    for (std::size_t i = 0; i < a.size(); ++i) ref[i] = 2.5 * a[i];
    expect_close(read(*be, sa.view), ref, tol, "scale");
    EXPECT_TRUE(outside_untouched(*be, sa, 3));

    EXPECT_THROW(be->add(sa.view, be->alloc(dt, n, c + 1), out.view), Error);
  }
}

TEST(CpuElementwise, MixedDtypesAreRejected) {
  auto be = make_cpu_backend();
  Tensor a = be->alloc(DType::F32, 2, 2), b = be->alloc(DType::F64, 2, 2);
  try {
    be->add(a, b, a);
    FAIL() << "mixed dtypes accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("add"), std::string::npos) << e.what();
  }
  EXPECT_THROW(be->axpy(1.0, a, b), Error);
  EXPECT_THROW(be->scale(be->alloc(DType::I32, 2, 2), 2.0), Error);
}

// Σ x² through the backend's accumulator, read back.
double sum_squares_of(Backend& be, const Tensor& x) {
  const Tensor acc = be.alloc(DType::F64, 1, 1);
  be.sum_squares(x, acc);
  return read(be, acc)[0];
}

TEST(CpuElementwise, SumAddsInRowMajorOrderIntoTheAccumulator) {
  auto be = make_cpu_backend();
  const std::int64_t n = 13, c = 7;
  const auto v = random_vector(n * c, 9, -2, 2);
  for (DType dt : {DType::F64, DType::F32}) {
    Strided s = strided(*be, dt, n, c, 3, 2);
    write(*be, s.view, v);
    const std::vector<double> stored = read(*be, s.view);
    double in_order = 0;
    for (double x : stored) in_order += x;
    const Tensor acc = be->alloc(DType::F64, 1, 1);
    be->fill(acc, 0.5);
    be->sum(s.view, acc);
    // acc + (the in-order sum from zero): the exact bits, not just close.
    const double want = 0.5 + in_order;
    const double got = read(*be, acc)[0];
    EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << got << " vs " << want;
  }
  // The accumulator must be one F64 element.
  EXPECT_THROW(be->sum(be->alloc(DType::F32, 2, 2), be->alloc(DType::F32, 1, 1)), Error);
  EXPECT_THROW(be->sum_squares(be->alloc(DType::F32, 2, 2), be->alloc(DType::F64, 1, 2)), Error);
}

TEST(CpuElementwise, SumSquaresMatchesReferenceOnStridedViews) {
  auto be = make_cpu_backend();
  const std::int64_t n = 37, c = 401;  // several 4096-element chunks, rows split across chunks
  const auto v = random_vector(n * c, 5, -3, 3);
  long double ref = 0;
  for (double x : v) ref += static_cast<long double>(x) * x;
  for (DType dt : {DType::F64, DType::F32}) {
    Strided s = strided(*be, dt, n, c, 7, 5);
    write(*be, s.view, v);
    std::vector<double> stored = read(*be, s.view);
    long double ref_dt = 0;
    for (double x : stored) ref_dt += static_cast<long double>(x) * x;
    const double got = sum_squares_of(*be, s.view);
    EXPECT_NEAR(got, static_cast<double>(ref_dt), 1e-12 * static_cast<double>(ref_dt));
    if (dt == DType::F64) {
      EXPECT_NEAR(got, static_cast<double>(ref), 1e-12 * static_cast<double>(ref));
    }
  }
  EXPECT_EQ(sum_squares_of(*be, be->alloc(DType::F32, 0, 4)), 0.0);
}

TEST(CpuElementwise, SumSquaresPropagatesNanAndInf) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::F64, DType::F32}) {
    std::vector<double> v = random_vector(10000, 6);
    v[9000] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_TRUE(std::isnan(sum_squares_of(*be, upload(*be, dt, 100, 100, v))));
    v[9000] = -std::numeric_limits<double>::infinity();
    EXPECT_TRUE(std::isinf(sum_squares_of(*be, upload(*be, dt, 100, 100, v))));
    v[9000] = 0;
    v[10] = std::numeric_limits<double>::infinity();
    v[11] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_TRUE(std::isnan(sum_squares_of(*be, upload(*be, dt, 100, 100, v))));
  }
}

TEST(CpuElementwise, DeterministicAcrossThreadCounts) {
  auto be = make_cpu_backend();
  const std::int64_t n = 301, c = 517;
  const auto a = random_vector(n * c, 7), b = random_vector(n * c, 8);
  for (DType dt : {DType::F64, DType::F32}) {
    double s1 = 0, s2 = 0;
    std::vector<double> r1, r2;
    auto run = [&](double& s, std::vector<double>& r) {
      Tensor x = upload(*be, dt, n, c, a), y = upload(*be, dt, n, c, b);
      be->axpy(0.3, x, y);
      be->add(x, y, y);
      be->scale(y, 1.7);
      s = sum_squares_of(*be, y);
      r = read(*be, y);
    };
    with_threads(1, [&] { run(s1, r1); });
    with_threads(2, [&] { run(s2, r2); });
    EXPECT_EQ(std::memcmp(&s1, &s2, sizeof s1), 0) << s1 << " vs " << s2;
    EXPECT_TRUE(bit_identical(r1, r2));
  }
}

}  // namespace
}  // namespace wiola::test
