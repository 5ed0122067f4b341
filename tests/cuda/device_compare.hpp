#pragma once
// Op tests written once and run against every CUDA build: the emulated
// backend (the kernels' own source on host fibers, every CI run) and a real
// device (tools/gpu-check.sh; skipped with the reason where none is present).
// Each test runs an op on the CUDA backend in fp32 or bf16 and on the CPU
// backend in fp64 on the same input values (rounded to the device dtype first,
// so both see the same numbers), and compares element by element:
// |device − reference| <= atol + rtol·|reference|.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "op_coverage.hpp"
#include "support/gradcheck.hpp"

namespace wiola::test {

// Provided by the test binary: the backend under test (null with a reason
// when it cannot run here) and what it is ("emulated", "device").
std::unique_ptr<Backend> make_device_backend(std::string& why_not);
const char* device_kind();

struct Tolerance {
  double atol = 0, rtol = 0;
};

// `v` rounded to bf16 (nearest, ties to even), or unchanged for other dtypes.
double round_to(DType dtype, double v);

// Values given to both backends.
struct Pair {
  Tensor ref, dev;  // CPU fp64, device
  std::vector<double> values;
};

// Columns [c0, c1) of both tensors of a pair (the values are not carried).
inline Pair cols(const Pair& p, std::int64_t c0, std::int64_t c1) {
  return {p.ref.cols_slice(c0, c1), p.dev.cols_slice(c0, c1), {}};
}

// Two device tensors hold the same values bit for bit (fp32 and bf16 read
// back exactly). The emulation runs threads in a fixed order, so a check of
// two runs of one op bites on a real device, where an order-dependent sum
// would vary.
inline void expect_same_bits(Backend& be, const Tensor& a, const Tensor& b,
                             const std::string& what) {
  EXPECT_EQ(read(be, a), read(be, b)) << what << " differs";
}

// SRPE tables [npos, dh/2] as the model makes them (c = r cos Θ, s = r sin Θ,
// angles in double), with radii and frequencies off the round values.
struct SrpeTables {
  std::vector<double> cos, sin;
};
inline SrpeTables srpe_tables(int npos, int dh) {
  const int half = dh / 2;
  SrpeTables t{std::vector<double>(static_cast<std::size_t>(npos * half)),
               std::vector<double>(static_cast<std::size_t>(npos * half))};
  for (int p = 0; p < npos; ++p)
    for (int j = 0; j < half; ++j) {
      const double w = std::pow(10000.0, -2.0 * j / dh);
      const double theta = p * w * (1 + 1.0 / 8), r = 1 + 0.1 * std::sin(p * 0.01 * w);
      t.cos[static_cast<std::size_t>(p * half + j)] = r * std::cos(theta);
      t.sin[static_cast<std::size_t>(p * half + j)] = r * std::sin(theta);
    }
  return t;
}

class DeviceOpTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override;
  // Fails if the test declared an op (WIOLA_DEVICE_OP_TEST) it did not run.
  void TearDown() override;
  DType dtype() const { return GetParam(); }
  Backend& cpu() { return *cpu_; }
  Backend& dev() { return *dev_; }

  // An input: uniform in [lo, hi) from `seed`, rounded to the device dtype
  // (`device_dtype`, default the compute dtype).
  Pair input(std::int64_t rows, std::int64_t cols, std::uint64_t seed, double lo = -1.0,
             double hi = 1.0);
  Pair input_as(DType device_dtype, std::int64_t rows, std::int64_t cols,
                const std::vector<double>& values);
  // An output both backends write (zeros), the device's in `device_dtype`.
  Pair output(std::int64_t rows, std::int64_t cols);
  Pair output_as(DType device_dtype, std::int64_t rows, std::int64_t cols);
  Pair index(const std::vector<std::int32_t>& idx);
  // Copies the reference tensor's values into the device tensor (outputs that
  // an op accumulates into start equal).
  void same_start(Pair& p, const std::vector<double>& values);

  // Compares and records the largest error of this op and dtype.
  void expect_close(const std::string& what, const Pair& p, Tolerance tol);
  // Bf16 or fp32 tolerance by the test's dtype.
  Tolerance tol(Tolerance f32, Tolerance bf16) const {
    return dtype() == DType::BF16 ? bf16 : f32;
  }

 private:
  std::unique_ptr<Backend> cpu_, dev_;
  OpRecorder ran_;
};

std::string dtype_param_name(const ::testing::TestParamInfo<DType>& info);

#define WIOLA_DEVICE_OP_SUITE(suite)                                                   \
  INSTANTIATE_TEST_SUITE_P(Dtypes, suite, ::testing::Values(DType::F32, DType::BF16), \
                           ::wiola::test::dtype_param_name)

}  // namespace wiola::test
