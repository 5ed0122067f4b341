#pragma once
// Global gradient-norm clipping (SPEC: clip 1.0 over all parameters of all
// ranks): the factor every gradient is multiplied by before the update.
namespace wiola {

// 1 when clipping is off (clip <= 0) or the norm is within it; otherwise
// clip / (norm + 1e-6), the ε keeping the scaled norm just under the clip.
inline double clip_factor(double grad_norm, double clip) {
  return clip > 0 && grad_norm > clip ? clip / (grad_norm + 1e-6) : 1.0;
}

}  // namespace wiola
