#include "device_compare.hpp"

#include <cstring>

namespace wiola::test {

double round_to(DType dtype, double v) {
  if (dtype != DType::BF16) return dtype == DType::F32 ? double(float(v)) : v;
  float f = static_cast<float>(v);
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return v;
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

void DeviceOpTest::SetUp() {
  std::string why;
  dev_ = make_device_backend(why);
  if (!dev_) GTEST_SKIP() << "no CUDA device to test on (" << device_kind() << "): " << why;
  cpu_ = make_cpu_backend();
  dev_->set_observer(&ran_);
}

void DeviceOpTest::TearDown() {
  if (!dev_) return;
  dev_->set_observer(nullptr);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const OpCase* c = op_case_of(info->test_suite_name(), info->name());
  if (c == nullptr) return;
  for (Op op : c->ops) {
    EXPECT_TRUE(ran_.seen.count(op) > 0) << c->suite << "." << c->test << " declares "
                                         << op_name(op) << " but did not run it on the device";
  }
}

Pair DeviceOpTest::input(std::int64_t rows, std::int64_t cols, std::uint64_t seed, double lo,
                         double hi) {
  return input_as(dtype(), rows, cols,
                  random_vector(static_cast<std::size_t>(rows * cols), seed, lo, hi));
}

Pair DeviceOpTest::input_as(DType device_dtype, std::int64_t rows, std::int64_t cols,
                            const std::vector<double>& values) {
  Pair p;
  p.values = values;
  for (double& v : p.values) v = round_to(device_dtype, v);
  p.ref = upload(*cpu_, device_dtype == DType::I32 ? DType::I32 : DType::F64, rows, cols,
                 p.values);
  p.dev = upload(*dev_, device_dtype, rows, cols, p.values);
  return p;
}

Pair DeviceOpTest::output(std::int64_t rows, std::int64_t cols) {
  return output_as(dtype(), rows, cols);
}

Pair DeviceOpTest::output_as(DType device_dtype, std::int64_t rows, std::int64_t cols) {
  Pair p;
  p.ref = cpu_->alloc(device_dtype == DType::I32 ? DType::I32 : DType::F64, rows, cols);
  p.dev = dev_->alloc(device_dtype, rows, cols);
  return p;
}

Pair DeviceOpTest::index(const std::vector<std::int32_t>& idx) {
  std::vector<double> v(idx.begin(), idx.end());
  return input_as(DType::I32, static_cast<std::int64_t>(idx.size()), 1, v);
}

void DeviceOpTest::same_start(Pair& p, const std::vector<double>& values) {
  p.values = values;
  for (double& v : p.values) v = round_to(p.dev.dtype(), v);
  write(*cpu_, p.ref, p.values);
  write(*dev_, p.dev, p.values);
}

void DeviceOpTest::expect_close(const std::string& what, const Pair& p, Tolerance tol) {
  const std::vector<double> ref = read(*cpu_, p.ref), got = read(*dev_, p.dev);
  ASSERT_EQ(ref.size(), got.size()) << what;
  double worst = 0, worst_ratio = 0;
  std::size_t worst_at = 0, bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(got[i] - ref[i]);
    const double allowed = tol.atol + tol.rtol * std::fabs(ref[i]);
    const bool nan_mismatch = std::isnan(got[i]) != std::isnan(ref[i]);
    if (nan_mismatch || err > allowed) ++bad;
    const double ratio = allowed > 0 ? err / allowed : (err > 0 ? 1e300 : 0);
    if (nan_mismatch || ratio > worst_ratio) {
      worst_ratio = nan_mismatch ? 1e300 : ratio;
      worst = err;
      worst_at = i;
    }
  }
  std::printf("[%s %s] %s: max |err| %.3g at %zu (%.2f of the allowed %.1e + %.1e·|ref|)\n",
              device_kind(), std::string(dtype_name(dtype())).c_str(), what.c_str(), worst,
              worst_at, worst_ratio, tol.atol, tol.rtol);
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << ref.size()
                     << " elements outside the tolerance; worst at " << worst_at << ": device "
                     << (ref.empty() ? 0 : got[worst_at]) << ", reference "
                     << (ref.empty() ? 0 : ref[worst_at]);
}

std::string dtype_param_name(const ::testing::TestParamInfo<DType>& info) {
  return info.param == DType::BF16 ? "bf16" : "fp32";
}

}  // namespace wiola::test
