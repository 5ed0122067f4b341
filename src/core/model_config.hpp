#pragma once
// Hyper-parameters of a Wiola model (../shared/SPEC.md "Shapes and names",
// and "The Wiola 13M variant" for the second family), the named presets, and
// the exact parameter count. The bottom layer: the
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
// The architecture family: the main Wiola layer (GCLA, DSFF, WRMSNorm; seeds
// 000/001) or Wiola 13M (gated spiral attention, butterfly FFN, RMSNorm; seed
// 002). The fields each family reads are marked below.
enum class Arch : std::uint8_t { Wiola, Wiola13m };
// Wiola 13M: the gate reads the head-averaged queries before (pre, the
// default) or after (post) spiral RoPE.
enum class GateSource : std::uint8_t { Pre, Post };

std::string_view summary_mode_name(SummaryMode m);
SummaryMode parse_summary_mode(std::string_view s);  // "causal" | "sequence"
std::string_view atm_mode_name(AtmMode m);
AtmMode parse_atm_mode(std::string_view s);  // "off" | "causal" | "paper"
std::string_view arch_name(Arch a);
Arch parse_arch(std::string_view s);  // "wiola" | "wiola13m"
std::string_view gate_source_name(GateSource g);
GateSource parse_gate_source(std::string_view s);  // "pre" | "post"

// Fields marked [main] are read by the main family only, [13m] by Wiola 13M
// only; the rest by both. Every preset sets both families' widths (dA = d,
// dB = 4d, dff = 4d), so switching `arch` on a preset gives a consistent model.
struct ModelConfig {
  std::string preset = "custom";
  Arch arch = Arch::Wiola;
  int d = 0;       // hidden width
  int L = 0;       // layers
  int H = 0;       // query heads
  int Hkv = 0;     // key/value heads
  int dA = 0;      // [main] DSFF narrow width
  int dB = 0;      // [main] DSFF wide width
  int dff = 0;     // [13m] butterfly FFN width
  int V = 0;       // vocabulary
  int T = 0;       // context length
  double theta0 = 10000.0;  // SRPE / spiral RoPE base
  double k_s = 8.0;    // [main]
  double a_s = 0.1;    // [main]
  double f_s = 0.01;   // [main]
  double alpha = 0.05;  // [13m] spiral RoPE growth: φ_i = 1 + α·√(i+1)/√(dh/2)
  double tau = 0.92;  // [main] ATM merge threshold
  int Lambda = 2;     // [main] GCLA lookback: summaries in a layer's context
  double eps = 1e-6;  // (W)RMSNorm epsilon
  SummaryMode summary = SummaryMode::Causal;  // [main]
  AtmMode atm = AtmMode::Causal;              // [main]
  GateSource gate = GateSource::Pre;          // [13m]
  double init_std = 0.02;

  int head_dim() const { return d / H; }
  bool main_family() const { return arch == Arch::Wiola; }
  // ATM runs (in training only) in layers [floor(L/3), floor(2L/3)) of the main family.
  bool atm_layer(int layer) const {
    return main_family() && atm != AtmMode::Off && layer >= L / 3 && layer < (2 * L) / 3;
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

// Side tensors (GCLA summaries) that cross into a pipeline stage whose first
// layer is `layer`, besides the activation: min(Λ − 1, layer) in the main
// family, none in Wiola 13M. The most any boundary of the model carries.
int boundary_carry(const ModelConfig& c, int layer);
int max_boundary_carry(const ModelConfig& c);

// Warnings for the paper-literal modes that let a position see later tokens.
std::vector<std::string> leak_warnings(const ModelConfig& c);

}  // namespace wiola
