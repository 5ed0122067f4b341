#pragma once
// Test helpers for anything that runs on a Backend: seeded random data, host
// <-> tensor copies that work on strided views, and a central-finite-
// difference gradient checker. Used by the op tests and the whole-model tests.
//
// Gradient checks take a scalar loss L(x) = Σ r ⊙ f(x) evaluated in fp64 and
// compare the analytic gradient with (L(x + h e_k) − L(x − h e_k)) / 2h. With
// fp64 the best step is about cbrt(machine eps) ≈ 6e-6 (truncation h² against
// rounding eps/h); kDefaultStep = 1e-5 sits at the flat bottom of that curve.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "backend/backend.hpp"
#include "core/error.hpp"

namespace wiola::test {

inline constexpr double kDefaultStep = 1e-5;

// n values uniform in [lo, hi) from a seeded std::mt19937_64.
inline std::vector<double> random_vector(std::size_t n, std::uint64_t seed, double lo = -1.0,
                                         double hi = 1.0) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

// Writes row-major host values (rows * cols of them) into t, which may be a
// strided view; values are converted to t's dtype (F32, F64, I32, or BF16
// through an F32 row and the backend's convert).
inline void write(Backend& be, const Tensor& t, const std::vector<double>& values) {
  require(static_cast<std::int64_t>(values.size()) == t.numel(), "test::write: ", values.size(),
          " values for a ", t.rows(), "x", t.cols(), " tensor");
  if (t.dtype() == DType::BF16 && t.contiguous() && t.numel() > 0) {  // one conversion
    std::vector<float> buf(values.begin(), values.end());
    const Tensor f = be.alloc(DType::F32, t.rows(), t.cols());
    be.from_host(buf.data(), f);
    be.convert(f, t);
    return;
  }
  const auto cols = static_cast<std::size_t>(t.cols());
  for (std::int64_t r = 0; r < t.rows(); ++r) {
    const Tensor row = t.rows_slice(r, r + 1);  // one row is always contiguous
    const auto first = values.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * cols);
    switch (t.dtype()) {
      case DType::F32: {
        std::vector<float> buf(first, first + static_cast<std::ptrdiff_t>(cols));
        be.from_host(buf.data(), row);
        break;
      }
      case DType::F64: {
        std::vector<double> buf(first, first + static_cast<std::ptrdiff_t>(cols));
        be.from_host(buf.data(), row);
        break;
      }
      case DType::I32: {
        std::vector<std::int32_t> buf(cols);
        std::transform(first, first + static_cast<std::ptrdiff_t>(cols), buf.begin(),
                       [](double x) { return static_cast<std::int32_t>(x); });
        be.from_host(buf.data(), row);
        break;
      }
      case DType::BF16: {
        std::vector<float> buf(first, first + static_cast<std::ptrdiff_t>(cols));
        const Tensor f = be.alloc(DType::F32, 1, row.cols());
        be.from_host(buf.data(), f);
        be.convert(f, row);
        break;
      }
    }
  }
}

// The values of t (any view) as row-major doubles.
inline std::vector<double> read(Backend& be, const Tensor& t) {
  std::vector<double> out(static_cast<std::size_t>(t.numel()));
  if (t.dtype() == DType::BF16 && t.contiguous() && t.numel() > 0) {  // one conversion
    const Tensor f = be.alloc(DType::F32, t.rows(), t.cols());
    be.convert(t, f);
    std::vector<float> buf(out.size());
    be.to_host(f, buf.data());
    std::copy(buf.begin(), buf.end(), out.begin());
    return out;
  }
  const auto cols = static_cast<std::size_t>(t.cols());
  for (std::int64_t r = 0; r < t.rows(); ++r) {
    const Tensor row = t.rows_slice(r, r + 1);
    auto dst = out.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * cols);
    switch (t.dtype()) {
      case DType::F32: {
        std::vector<float> buf(cols);
        be.to_host(row, buf.data());
        std::copy(buf.begin(), buf.end(), dst);
        break;
      }
      case DType::F64: {
        std::vector<double> buf(cols);
        be.to_host(row, buf.data());
        std::copy(buf.begin(), buf.end(), dst);
        break;
      }
      case DType::I32: {
        std::vector<std::int32_t> buf(cols);
        be.to_host(row, buf.data());
        std::copy(buf.begin(), buf.end(), dst);
        break;
      }
      case DType::BF16: {
        const Tensor f = be.alloc(DType::F32, 1, row.cols());
        be.convert(row, f);
        std::vector<float> buf(cols);
        be.to_host(f, buf.data());
        std::copy(buf.begin(), buf.end(), dst);
        break;
      }
    }
  }
  return out;
}

// A new contiguous rows x cols tensor holding `values`.
inline Tensor upload(Backend& be, DType dtype, std::int64_t rows, std::int64_t cols,
                     const std::vector<double>& values) {
  Tensor t = be.alloc(dtype, rows, cols);
  write(be, t, values);
  return t;
}

// A new I32 [n, 1] index tensor.
inline Tensor upload_index(Backend& be, const std::vector<std::int32_t>& idx) {
  std::vector<double> v(idx.begin(), idx.end());
  return upload(be, DType::I32, static_cast<std::int64_t>(idx.size()), 1, v);
}

// A new tensor filled uniformly in [lo, hi) from `seed`.
inline Tensor random_tensor(Backend& be, DType dtype, std::int64_t rows, std::int64_t cols,
                            std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return upload(be, dtype, rows, cols,
                random_vector(static_cast<std::size_t>(rows * cols), seed, lo, hi));
}

// Σ r ⊙ f in double.
inline double weighted_sum(const std::vector<double>& f, const std::vector<double>& r) {
  require(f.size() == r.size(), "test::weighted_sum: ", f.size(), " values, ", r.size(),
          " weights");
  double s = 0.0;
  for (std::size_t i = 0; i < f.size(); ++i) s += f[i] * r[i];
  return s;
}

struct GradCheckResult {
  double rel_error = 0.0;      // ‖g_a − g_n‖ / max(‖g_a‖, ‖g_n‖, 1e-30)
  double max_abs_error = 0.0;  // max_k |g_a[k] − g_n[k]|
  double analytic_norm = 0.0;
  double numeric_norm = 0.0;
  std::int64_t checked = 0;    // elements differentiated
};

// The checker behind both entry points: element k of the input is read with
// get(k) and set with set(k, value); loss() evaluates L at the current input.
// max_elements > 0 checks only that many elements, spread evenly, and compares
// the norms over those.
inline GradCheckResult central_differences(std::int64_t n,
                                           const std::function<double(std::int64_t)>& get,
                                           const std::function<void(std::int64_t, double)>& set,
                                           const std::function<double()>& loss,
                                           const std::vector<double>& analytic, double h,
                                           std::int64_t max_elements) {
  require(static_cast<std::int64_t>(analytic.size()) == n, "check_gradient: ", n,
          " inputs but ", analytic.size(), " gradient entries");
  const std::int64_t stride =
      max_elements > 0 && n > max_elements ? (n + max_elements - 1) / max_elements : 1;
  GradCheckResult res;
  double diff2 = 0.0, a2 = 0.0, n2 = 0.0;
  for (std::int64_t k = 0; k < n; k += stride) {
    const double x0 = get(k);
    const double xp = x0 + h, xm = x0 - h;  // the step actually taken is xp − xm
    set(k, xp);
    const double lp = loss();
    set(k, xm);
    const double lm = loss();
    set(k, x0);
    const double num = (lp - lm) / (xp - xm);
    const double ana = analytic[static_cast<std::size_t>(k)];
    diff2 += (ana - num) * (ana - num);
    a2 += ana * ana;
    n2 += num * num;
    res.max_abs_error = std::max(res.max_abs_error, std::abs(ana - num));
    ++res.checked;
  }
  res.analytic_norm = std::sqrt(a2);
  res.numeric_norm = std::sqrt(n2);
  res.rel_error = std::sqrt(diff2) / std::max({res.analytic_norm, res.numeric_norm, 1e-30});
  return res;
}

// Compares `analytic` (dL/dx) with central differences of loss() over the
// elements of the host vector x, which loss() must read (x is perturbed in
// place and restored).
inline GradCheckResult check_gradient(std::vector<double>& x, const std::function<double()>& loss,
                                      const std::vector<double>& analytic,
                                      double h = kDefaultStep, std::int64_t max_elements = 0) {
  return central_differences(
      static_cast<std::int64_t>(x.size()),
      [&](std::int64_t k) { return x[static_cast<std::size_t>(k)]; },
      [&](std::int64_t k, double v) { x[static_cast<std::size_t>(k)] = v; }, loss, analytic, h,
      max_elements);
}

// The same for a backend tensor (e.g. a model parameter), perturbed element by
// element in place through 1 x 1 views and restored afterwards.
inline GradCheckResult check_gradient(Backend& be, const Tensor& x,
                                      const std::function<double()>& loss,
                                      const std::vector<double>& analytic,
                                      double h = kDefaultStep, std::int64_t max_elements = 0) {
  const std::vector<double> host = read(be, x);
  auto element = [&](std::int64_t k) {
    const std::int64_t r = k / x.cols(), c = k % x.cols();
    return x.rows_slice(r, r + 1).cols_slice(c, c + 1);
  };
  return central_differences(
      x.numel(), [&](std::int64_t k) { return host[static_cast<std::size_t>(k)]; },
      [&](std::int64_t k, double v) { write(be, element(k), {v}); }, loss, analytic, h,
      max_elements);
}

}  // namespace wiola::test
