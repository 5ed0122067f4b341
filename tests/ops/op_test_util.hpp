#pragma once
// Shared pieces of the CPU op tests: the gradient tolerance and a log of the
// largest finite-difference error per op, thread-count control for the
// determinism tests, strided views, and vector comparisons.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "support/gradcheck.hpp"

namespace wiola::test {

// Norm-wise relative error every fp64 gradient must meet.
inline constexpr double kGradTol = 1e-6;

// Logs one gradient check (stdout and the test's XML properties) and keeps
// the largest relative error per op for the table printed when the run ends.
void record_gradcheck(const std::string& op, const std::string& what, const GradCheckResult& r);

// Checks and records in one go.
inline void expect_grad(const std::string& op, const std::string& what,
                        const GradCheckResult& r) {
  record_gradcheck(op, what, r);
  EXPECT_LE(r.rel_error, kGradTol) << op << " " << what << ": relative error " << r.rel_error
                                   << " (max abs " << r.max_abs_error << ", |analytic| "
                                   << r.analytic_norm << ", |numeric| " << r.numeric_norm << ")";
  EXPECT_GT(r.analytic_norm + r.numeric_norm, 0.0) << op << " " << what << ": gradient is zero";
}

// Runs f with the OpenMP thread count set to n, then restores it.
template <class F>
void with_threads(int n, F&& f) {
  const int old = omp_get_max_threads();
  omp_set_num_threads(n);
  f();
  omp_set_num_threads(old);
}

// A rows x cols column slice (from column `offset`) of a wider
// rows x (cols + extra) buffer whose every element starts as `sentinel`.
struct Strided {
  Tensor parent, view;
};
inline Strided strided(Backend& be, DType dt, std::int64_t rows, std::int64_t cols,
                       std::int64_t extra, std::int64_t offset, double sentinel = 777.0) {
  Tensor wide = be.alloc(dt, rows, cols + extra);
  be.fill(wide, sentinel);
  return {wide, wide.cols_slice(offset, offset + cols)};
}

// Every element of `parent` outside columns [offset, offset + cols) still
// holds `sentinel`.
inline bool outside_untouched(Backend& be, const Strided& s, std::int64_t offset,
                              double sentinel = 777.0) {
  const std::vector<double> all = read(be, s.parent);
  const std::int64_t w = s.parent.cols();
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(all.size()); ++i) {
    const std::int64_t c = i % w;
    if ((c < offset || c >= offset + s.view.cols()) && all[static_cast<std::size_t>(i)] != sentinel)
      return false;
  }
  return true;
}

inline double max_abs(const std::vector<double>& a) {
  double m = 0.0;
  for (double x : a) m = std::max(m, std::abs(x));
  return m;
}

inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// max |a − b| <= tol · max(1, max |b|)
inline void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol,
                         const std::string& what) {
  const double err = max_abs_diff(a, b);
  EXPECT_LE(err, tol * std::max(1.0, max_abs(b))) << what << ": max abs difference " << err;
}

inline bool bit_identical(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

inline std::vector<double> zeros(std::size_t n) { return std::vector<double>(n, 0.0); }

}  // namespace wiola::test
