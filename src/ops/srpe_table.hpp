#pragma once
// SRPE coefficient tables (SPEC.md "SRPE"), computed in double on the host.
#include <vector>

namespace wiola {

// Fills row-major [positions, head_dim/2] tables of c = r·cos Θ and s = r·sin Θ:
//   ω_j = θ0^(−2j/dh), Θ_j(p) = p·ω_j·(1 + 1/k_s), r_j(p) = 1 + a_s·sin(p·f_s·ω_j).
// Throws wiola::Error when head_dim is not a positive even number, positions
// is negative, θ0 <= 0 or k_s == 0.
void srpe_coefficients(int positions, int head_dim, double theta0, double k_s, double a_s,
                       double f_s, std::vector<double>& cos_out, std::vector<double>& sin_out);

}  // namespace wiola
