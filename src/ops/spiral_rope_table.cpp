#include "ops/spiral_rope_table.hpp"

#include <cmath>
#include <cstddef>

#include "core/error.hpp"

namespace wiola {

void spiral_rope_coefficients(int positions, int head_dim, double base, double alpha,
                              std::vector<double>& cos_out, std::vector<double>& sin_out) {
  require(head_dim > 0 && head_dim % 2 == 0, "spiral_rope_coefficients: head_dim ", head_dim,
          " must be positive and even");
  require(positions >= 0, "spiral_rope_coefficients: negative number of positions ", positions);
  require(base > 0.0, "spiral_rope_coefficients: base ", base, " must be positive");
  const int half = head_dim / 2;
  const std::size_t total = static_cast<std::size_t>(positions) * static_cast<std::size_t>(half);
  cos_out.assign(total, 0.0);
  sin_out.assign(total, 0.0);
  for (int i = 0; i < half; ++i) {
    const double theta = std::pow(base, -2.0 * i / head_dim);
    const double phi = 1.0 + alpha * std::sqrt(i + 1.0) / std::sqrt(static_cast<double>(half));
    const double freq = theta * phi;
    for (int m = 0; m < positions; ++m) {
      // The angle stays in double until cos/sin (it reaches ~T rad for i = 0).
      const double angle = static_cast<double>(m) * freq;
      const std::size_t at = static_cast<std::size_t>(m) * half + static_cast<std::size_t>(i);
      cos_out[at] = std::cos(angle);
      sin_out[at] = std::sin(angle);
    }
  }
}

}  // namespace wiola
