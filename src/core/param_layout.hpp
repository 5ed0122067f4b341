#pragma once
// Where every parameter lives in a stage's flat buffer. A stage owns a
// contiguous range of layers, plus the embedding (first stage) and the final
// norm and tied head (last stage; it keeps its own copy of embed.weight).
// Entries appear in canonical order, so the one-stage layout is the order of
// SPEC.md and a pipeline stage's layout is a sub-sequence of it.
//
// Every parameter starts on a multiple of kAlignElements (core/alignment.hpp),
// so each view, in bf16, fp32 or fp64, is 256-byte aligned as cuBLASLt
// assumes; the gaps and the tail up to total() are padding, zero and never
// a parameter. The exception: a parameter whose rows are stacked under its
// predecessor's for one fused product (v under k, ctx_v under ctx_k, a_up
// under a_gate: `ParamSpec::stacked`) follows it with no gap, so that the two
// are one matrix; it is aligned when its predecessor's size is a multiple of
// kAlignElements, as it is in every preset (tests/model/test_alignment.cpp).
// Names, files and checkpoints know nothing of offsets, so the padding is
// invisible outside a running stage.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/alignment.hpp"
#include "core/model_config.hpp"
#include "core/param_names.hpp"

namespace wiola {

struct StageSpec {
  int first_layer = 0;  // layers [first_layer, end_layer)
  int end_layer = 0;
  bool embed = true;    // holds embed.weight for the input embedding
  bool head = true;     // holds final_norm and embed.weight for the tied output head
  static StageSpec whole(const ModelConfig& c) { return {0, c.L, true, true}; }
  int num_layers() const { return end_layer - first_layer; }
};

enum class InitKind : std::uint8_t { Normal, Constant };

struct ParamSpec {
  std::string name;       // canonical name (param_names.hpp), e.g. "layers.3.attn.q_proj.weight"
  int layer = -1;         // the layer it belongs to; -1 for the embedding and the final norm
  std::int64_t rows = 0;  // [out, in] for matrices; [1, n] for vectors
  std::int64_t cols = 0;
  std::int64_t offset = 0;  // element offset in the flat buffer
  bool stacked = false;     // follows the previous entry with no padding (one fused matrix)
  bool decay = false;       // AdamW weight decay applies (matrices and the embedding)
  InitKind init = InitKind::Normal;
  double init_value = 0.0;  // std for Normal, value for Constant
  std::int64_t numel() const { return rows * cols; }
};

class ParamLayout {
 public:
  ParamLayout() = default;
  ParamLayout(const ModelConfig& c, const StageSpec& s);
  // The parameters of several chunks on one rank (interleaved schedules):
  // the embedding first, then every chunk's layers, then the final norm.
  ParamLayout(const ModelConfig& c, std::span<const StageSpec> chunks);

  const std::vector<ParamSpec>& entries() const { return entries_; }
  // Elements of the flat buffer, padding included (a multiple of kAlignElements).
  std::int64_t total() const { return total_; }
  // Elements that are parameters: the exact count, padding left out.
  std::int64_t parameters() const { return parameters_; }
  // The parameter elements of [begin, end) as maximal runs [first, second)
  // with no padding inside, in order.
  std::vector<std::pair<std::int64_t, std::int64_t>> element_runs(std::int64_t begin,
                                                                  std::int64_t end) const;
  bool contains(const std::string& name) const;
  const ParamSpec& find(const std::string& name) const;  // throws naming the parameter

 private:
  void add(std::string name, int layer, std::int64_t rows, std::int64_t cols, bool decay,
           InitKind init, double value, bool stacked = false);
  std::vector<ParamSpec> entries_;
  std::int64_t total_ = 0, parameters_ = 0;
};

// Fills `host` (length layout.total()) with the initial values: each element a
// pure function of (seed, parameter name, element index).
void init_params_host(const ParamLayout& layout, std::uint64_t seed, std::vector<double>& host);

}  // namespace wiola
