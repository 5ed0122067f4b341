#pragma once
// Spiral RoPE coefficient tables (SPEC "The Wiola 13M variant"; paper 002
// eqs. 4-7), computed in double on the host, for the rotary op on interleaved
// pairs (Backend::srpe_fwd with RotaryPairs::Interleaved).
#include <vector>

namespace wiola {

// Fills row-major [positions, head_dim/2] tables of cos and sin of the angle
// m·θ_i·φ_i at position m for pair i (coordinates 2i, 2i + 1):
//   θ_i = base^(−2i/dh), φ_i = 1 + α·√(i+1)/√(dh/2).
// α = 0 is plain interleaved RoPE. Throws wiola::Error when head_dim is not a
// positive even number, positions is negative or base <= 0.
void spiral_rope_coefficients(int positions, int head_dim, double base, double alpha,
                              std::vector<double>& cos_out, std::vector<double>& sin_out);

}  // namespace wiola
