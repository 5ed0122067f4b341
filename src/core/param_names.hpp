#pragma once
// The canonical parameter names (../shared/SPEC.md "Shapes and names", and
// "The Wiola 13M variant" for the second family), spelled here once: code
// elsewhere uses these constants, never the strings.
// A layer's parameters are "layers.<i>.<role>" (layer_param); ParamSpec::layer
// says which layer a parameter belongs to, so nobody parses names for it.
#include <string>
#include <string_view>

namespace wiola::param_names {

inline constexpr const char* kEmbed = "embed.weight";  // the tied embedding and output head
inline constexpr const char* kFinalNorm = "final_norm";  // the group of the two below
inline constexpr const char* kFinalNormGamma = "final_norm.gamma";
inline constexpr const char* kFinalNormDelta = "final_norm.delta";

// The roles of one layer's parameters, in canonical order.
namespace role {
inline constexpr const char* kAttnNormGamma = "attn_norm.gamma";
inline constexpr const char* kAttnNormDelta = "attn_norm.delta";
inline constexpr const char* kQProj = "attn.q_proj.weight";
inline constexpr const char* kKProj = "attn.k_proj.weight";
inline constexpr const char* kVProj = "attn.v_proj.weight";
inline constexpr const char* kCtxKProj = "attn.ctx_k_proj.weight";
inline constexpr const char* kCtxVProj = "attn.ctx_v_proj.weight";
inline constexpr const char* kGateProj = "attn.gate_proj.weight";
inline constexpr const char* kOProj = "attn.o_proj.weight";
inline constexpr const char* kCtxLogit = "attn.ctx_logit";
inline constexpr const char* kFfnNormGamma = "ffn_norm.gamma";
inline constexpr const char* kFfnNormDelta = "ffn_norm.delta";
inline constexpr const char* kAGate = "ffn.a_gate.weight";
inline constexpr const char* kAUp = "ffn.a_up.weight";
inline constexpr const char* kADown = "ffn.a_down.weight";
inline constexpr const char* kBUp = "ffn.b_up.weight";
inline constexpr const char* kBDown = "ffn.b_down.weight";
inline constexpr const char* kFuse = "ffn.fuse.weight";

// Wiola 13M (arch wiola13m), in its canonical order: attn_norm.gamma, q, k,
// v and o projections (the roles above), then these; ffn_norm.gamma between
// the gate and the FFN. No δ, no context projections, no ctx_logit.
inline constexpr const char* kGateW1 = "attn.gate_w1.weight";      // [H, dh]
inline constexpr const char* kGateW2 = "attn.gate_w2.weight";      // [H, H]
inline constexpr const char* kGateW2Bias = "attn.gate_w2.bias";    // [H]
inline constexpr const char* kUp = "ffn.up.weight";                // [2·dff, d]: [a; b]
inline constexpr const char* kBypass = "ffn.bypass.weight";        // [dff, d]
inline constexpr const char* kDown = "ffn.down.weight";            // [d, dff]
}  // namespace role

// "layers.<layer>.<role>".
std::string layer_param(int layer, std::string_view role);
// The role part of a layer parameter's name ("attn.q_proj.weight" of
// "layers.3.attn.q_proj.weight"); "" for a name that is not a layer's.
std::string_view layer_role(std::string_view name);
// Parameters stored 1-D in files: the norms' gamma and delta, the context
// logit, biases.
bool is_vector_param(std::string_view name);

}  // namespace wiola::param_names
