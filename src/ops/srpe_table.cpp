#include "ops/srpe_table.hpp"

#include <cmath>
#include <cstddef>

#include "core/error.hpp"

namespace wiola {

void srpe_coefficients(int positions, int head_dim, double theta0, double k_s, double a_s,
                       double f_s, std::vector<double>& cos_out, std::vector<double>& sin_out) {
  require(head_dim > 0 && head_dim % 2 == 0, "srpe_coefficients: head_dim ", head_dim,
          " must be positive and even");
  require(positions >= 0, "srpe_coefficients: negative number of positions ", positions);
  require(theta0 > 0.0, "srpe_coefficients: theta0 ", theta0, " must be positive");
  require(k_s != 0.0, "srpe_coefficients: k_s must not be zero");
  const int half = head_dim / 2;
  const std::size_t total = static_cast<std::size_t>(positions) * static_cast<std::size_t>(half);
  cos_out.assign(total, 0.0);
  sin_out.assign(total, 0.0);
  const double stretch = 1.0 + 1.0 / k_s;
  for (int j = 0; j < half; ++j) {
    const double omega = std::pow(theta0, -2.0 * j / head_dim);
    for (int p = 0; p < positions; ++p) {
      // Angles reach ~2·10³ rad: both products stay in double until cos/sin.
      const double angle = static_cast<double>(p) * omega * stretch;
      const double radius = 1.0 + a_s * std::sin(static_cast<double>(p) * f_s * omega);
      const std::size_t at = static_cast<std::size_t>(p) * half + static_cast<std::size_t>(j);
      cos_out[at] = radius * std::cos(angle);
      sin_out[at] = radius * std::sin(angle);
    }
  }
}

}  // namespace wiola
