#pragma once
// Hyper-parameters of a Wiola model (../shared/SPEC.md "Shapes and names"),
// the named presets, and the exact parameter count. The bottom layer: the
// backend, the model, io and the tools all read it, and it reads nothing of
// theirs.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wiola {

// GCLA summaries: causal (position t sees the mean of tokens <= t) or the
// paper-literal mean over the whole sequence (which leaks the future).
enum class SummaryMode : std::uint8_t { Causal, Sequence };
enum class AtmMode : std::uint8_t { Off, Causal, Paper };

std::string_view summary_mode_name(SummaryMode m);
SummaryMode parse_summary_mode(std::string_view s);  // "causal" | "sequence"
std::string_view atm_mode_name(AtmMode m);
AtmMode parse_atm_mode(std::string_view s);  // "off" | "causal" | "paper"

struct ModelConfig {
  std::string preset = "custom";
  int d = 0;       // hidden width
  int L = 0;       // layers
  int H = 0;       // query heads
  int Hkv = 0;     // key/value heads
  int dA = 0;      // DSFF narrow width
  int dB = 0;      // DSFF wide width
  int V = 0;       // vocabulary
  int T = 0;       // context length
  double theta0 = 10000.0;
  double k_s = 8.0;
  double a_s = 0.1;
  double f_s = 0.01;
  double tau = 0.92;  // ATM merge threshold
  int Lambda = 2;     // GCLA lookback: summaries in a layer's context
  double eps = 1e-6;  // WRMSNorm epsilon
  SummaryMode summary = SummaryMode::Causal;
  AtmMode atm = AtmMode::Causal;
  double init_std = 0.02;

  int head_dim() const { return d / H; }
  // ATM runs (in training only) in layers [floor(L/3), floor(2L/3)).
  bool atm_layer(int layer) const {
    return atm != AtmMode::Off && layer >= L / 3 && layer < (2 * L) / 3;
  }
  // Throws wiola::Error naming the first field that is out of range or inconsistent.
  void validate() const;
  // Human-readable one-liner: "wiola-1.5b d=2048 L=28 ...".
  std::string describe() const;
};

// Presets: the four SPEC sizes plus small ones for tests and the embedded run.
std::vector<std::string> preset_names();
ModelConfig preset(std::string_view name);  // throws on an unknown name, listing the known ones

// Exact parameter counts (the tied embedding counted once).
std::int64_t layer_param_count(const ModelConfig& c);
std::int64_t param_count(const ModelConfig& c);

// Warnings for the paper-literal modes that let a position see later tokens.
std::vector<std::string> leak_warnings(const ModelConfig& c);

}  // namespace wiola
