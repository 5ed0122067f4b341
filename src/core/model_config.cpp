#include "core/model_config.hpp"

#include <algorithm>
#include <sstream>

#include "core/error.hpp"

namespace wiola {

std::string_view summary_mode_name(SummaryMode m) {
  return m == SummaryMode::Causal ? "causal" : "sequence";
}

SummaryMode parse_summary_mode(std::string_view s) {
  if (s == "causal") return SummaryMode::Causal;
  if (s == "sequence") return SummaryMode::Sequence;
  fail("summary mode '", s, "' is unknown (expected causal or sequence)");
}

std::string_view atm_mode_name(AtmMode m) {
  switch (m) {
    case AtmMode::Off: return "off";
    case AtmMode::Causal: return "causal";
    case AtmMode::Paper: return "paper";
  }
  return "?";
}

AtmMode parse_atm_mode(std::string_view s) {
  if (s == "off") return AtmMode::Off;
  if (s == "causal") return AtmMode::Causal;
  if (s == "paper") return AtmMode::Paper;
  fail("ATM mode '", s, "' is unknown (expected off, causal or paper)");
}

std::string_view arch_name(Arch a) { return a == Arch::Wiola ? "wiola" : "wiola13m"; }

Arch parse_arch(std::string_view s) {
  if (s == "wiola") return Arch::Wiola;
  if (s == "wiola13m") return Arch::Wiola13m;
  fail("architecture '", s, "' is unknown (expected wiola or wiola13m)");
}

std::string_view gate_source_name(GateSource g) { return g == GateSource::Pre ? "pre" : "post"; }

GateSource parse_gate_source(std::string_view s) {
  if (s == "pre") return GateSource::Pre;
  if (s == "post") return GateSource::Post;
  fail("gate source '", s, "' is unknown (expected pre or post)");
}

void ModelConfig::validate() const {
  auto positive = [](int v, const char* name) {
    require(v > 0, "model: ", name, " must be positive, got ", v);
  };
  positive(d, "d");
  positive(L, "L");
  positive(H, "H");
  positive(Hkv, "Hkv");
  if (main_family()) {
    positive(dA, "dA");
    positive(dB, "dB");
  } else {
    positive(dff, "dff");
  }
  positive(V, "V");
  positive(T, "T");
  require(d % H == 0, "model: d = ", d, " is not divisible by H = ", H);
  require(H % Hkv == 0, "model: Hkv = ", Hkv, " does not divide H = ", H);
  require(head_dim() % 2 == 0, "model: head width d/H = ", head_dim(), " must be even for ",
          main_family() ? "SRPE's rotate-half pairs" : "spiral RoPE's interleaved pairs");
  require(theta0 > 1.0, "model: theta0 must be > 1, got ", theta0);
  if (main_family()) {
    require(Lambda >= 1 && Lambda <= 8, "model: Lambda must be in [1, 8], got ", Lambda);
    require(k_s > 0.0, "model: k_s must be > 0, got ", k_s);
  } else {
    require(alpha >= 0.0 && alpha < 1e6, "model: alpha must be in [0, 1e6), got ", alpha);
  }
  require(eps > 0.0, "model: eps must be > 0, got ", eps);
  require(init_std > 0.0, "model: init_std must be > 0, got ", init_std);
  require(V <= (1 << 30), "model: V = ", V, " is too large");
}

std::string ModelConfig::describe() const {
  std::ostringstream os;
  os << preset << ": ";
  if (!main_family()) {
    os << "arch=" << arch_name(arch) << " d=" << d << " L=" << L << " H=" << H << " Hkv=" << Hkv
       << " dh=" << head_dim() << " dff=" << dff << " V=" << V << " T=" << T
       << " alpha=" << alpha << " gate=" << gate_source_name(gate);
    return os.str();
  }
  os << "d=" << d << " L=" << L << " H=" << H << " Hkv=" << Hkv << " dh=" << head_dim()
     << " dA=" << dA << " dB=" << dB << " V=" << V << " T=" << T << " Lambda=" << Lambda
     << " summary=" << summary_mode_name(summary) << " atm=" << atm_mode_name(atm)
     << " tau=" << tau;
  return os.str();
}

namespace {

ModelConfig make(const char* name, int d, int L, int H, int Hkv, int V, int T, int dA = 0,
                 int dB = 0) {
  ModelConfig c;
  c.preset = name;
  c.d = d;
  c.L = L;
  c.H = H;
  c.Hkv = Hkv;
  c.dA = dA ? dA : d;       // family rule dA = d
  c.dB = dB ? dB : 4 * d;   // family rule dB = 4d
  c.dff = 4 * d;            // Wiola 13M: dff = 4d (SPEC)
  c.V = V;
  c.T = T;
  return c;
}

// A Wiola 13M preset (SPEC "The Wiola 13M variant").
ModelConfig make_13m(const char* name, int d, int L, int H, int Hkv, int V, int T, int dff = 0) {
  ModelConfig c = make(name, d, L, H, Hkv, V, T);
  c.arch = Arch::Wiola13m;
  if (dff) c.dff = dff;
  return c;
}

std::vector<ModelConfig> all_presets() {
  return {
      make("wiola-120m", 768, 12, 12, 4, 32000, 2048),
      make("wiola-360m", 1024, 16, 16, 4, 32000, 2048),
      make("wiola-700m", 1536, 24, 16, 8, 32000, 2048),
      make("wiola-1.5b", 2048, 28, 16, 8, 32000, 2048),
      // Test and demo sizes. V = 257 matches the byte-level tokenizer; the
      // trainer adopts a dataset's vocabulary when V is not set explicitly.
      make("wiola-tiny", 16, 5, 4, 2, 257, 16, 16, 24),
      make("wiola-mini", 64, 4, 4, 2, 257, 64),
      make("wiola-small", 128, 6, 4, 2, 257, 128),
      // The second family (seed 002): SPEC's preset, 12,589,888 parameters.
      make_13m("wiola-13m", 256, 8, 8, 8, 8192, 512),
      // Test and comparison sizes of the second family: tiny (GQA with
      // h mod Hkv, dff not a multiple of d) and small (about wiola-small's count).
      make_13m("wiola13m-tiny", 16, 5, 4, 2, 257, 16, 24),
      make_13m("wiola13m-small", 128, 6, 4, 4, 257, 128),
  };
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : all_presets()) names.push_back(p.preset);
  return names;
}

ModelConfig preset(std::string_view name) {
  std::string known;
  for (const auto& p : all_presets()) {
    if (p.preset == name) return p;
    known += (known.empty() ? "" : ", ") + p.preset;
  }
  fail("unknown preset '", name, "' (known presets: ", known, ")");
}

std::int64_t layer_param_count(const ModelConfig& c) {
  const std::int64_t d = c.d, hd = static_cast<std::int64_t>(c.H) * c.head_dim(),
                     kvd = static_cast<std::int64_t>(c.Hkv) * c.head_dim();
  std::int64_t n = 0;
  if (!c.main_family()) {
    const std::int64_t H = c.H, dh = c.head_dim(), dff = c.dff;
    n += d;                  // attn_norm gamma
    n += hd * d;             // q_proj
    n += 2 * kvd * d;        // k_proj, v_proj
    n += d * hd;             // o_proj
    n += H * dh + H * H + H;  // gate_w1, gate_w2 and its bias
    n += d;                  // ffn_norm gamma
    n += 2 * dff * d;        // up
    n += dff * d;            // bypass
    n += d * dff;            // down
    return n;
  }
  n += 2 * d;                // attn_norm gamma, delta
  n += hd * d;               // q_proj
  n += 4 * kvd * d;          // k, v, ctx_k, ctx_v
  n += hd * d;               // gate_proj
  n += d * hd;               // o_proj
  n += 1;                    // ctx_logit
  n += 2 * d;                // ffn_norm
  n += 3 * std::int64_t(c.dA) * d;  // a_gate, a_up, a_down
  n += 2 * std::int64_t(c.dB) * d;  // b_up, b_down
  n += d * 2 * d;            // fuse
  return n;
}

std::int64_t param_count(const ModelConfig& c) {
  const std::int64_t final_norm = (c.main_family() ? 2 : 1) * std::int64_t(c.d);
  return std::int64_t(c.V) * c.d + std::int64_t(c.L) * layer_param_count(c) + final_norm;
}

int boundary_carry(const ModelConfig& c, int layer) {
  if (!c.main_family()) return 0;
  return std::min(c.Lambda - 1, layer);
}

int max_boundary_carry(const ModelConfig& c) { return c.main_family() ? c.Lambda - 1 : 0; }

std::vector<std::string> leak_warnings(const ModelConfig& c) {
  std::vector<std::string> w;
  if (!c.main_family()) return w;  // Wiola 13M has no paper-literal leaking mode
  if (c.summary == SummaryMode::Sequence)
    w.push_back(
        "summary=sequence (paper-literal): every position's GCLA context is the mean over the "
        "WHOLE sequence, so position t sees tokens after t. Training loss is optimistic and the "
        "model cannot be used autoregressively as trained.");
  if (c.atm == AtmMode::Paper)
    w.push_back(
        "atm=paper (paper-literal): in the middle-third layers the first token of each merged "
        "pair attends to its partner, i.e. to the next token. This leaks the future during "
        "training.");
  return w;
}

}  // namespace wiola
