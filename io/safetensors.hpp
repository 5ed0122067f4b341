#pragma once
// The Hugging Face side of the world: safetensors files (an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype, shape
// and byte range, then the raw little-endian data) and a `config.json` with
// model_type "wiola": the standard keys a Hugging Face user looks for
// (hidden_size, num_hidden_layers, rope_theta, ...), the Wiola-only fields
// under their own names (k_s, tau, summary, ...; core/model_fields.cpp has
// the one table), each value once, and `auto_map` pointing at the
// modeling_wiola.py shipped beside it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/model_config.hpp"

namespace wiola {

struct SafeTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<double> data;  // row-major
};

// Writes F32, F64 or BF16 tensors (BF16: rounded to nearest even; atomic:
// temp name, then rename).
void write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors,
                       DType dtype, const std::map<std::string, std::string>& metadata);
// The format's limit on the JSON header (safetensors: 100 MB).
inline constexpr std::uint64_t kSafetensorsMaxHeader = 100'000'000;
struct SafeTensorEntry {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t elements = 0, begin = 0, end = 0;  // end - begin = bytes
};
// Checks a header by rule before anything sized by the file is allocated:
// header length within the file and the 100 MB limit, a JSON object, no
// duplicate names, known dtypes, shape products that fit 64 bits, byte counts
// equal to dtype size x elements, offsets that tile the data exactly (no
// overlap, no gap, nothing past the end), __metadata__ values all strings.
// Each refusal names the file, the tensor and the rule.
std::vector<SafeTensorEntry> check_safetensors_header(const std::string& path,
                                                     std::uint64_t file_size,
                                                     std::uint64_t header_len,
                                                     const std::string& header_text);
// Reads every tensor (F64, F32, BF16 and F16 are converted to double). Throws
// naming the file and the problem for a malformed header or byte range.
std::vector<SafeTensor> read_safetensors(const std::string& path);

struct HfConfigExtras {
  std::vector<std::string> names;  // canonical tensor names, in order
  DType dtype = DType::F32;        // of the weights: torch_dtype
  std::int32_t bos_token_id = -1, eos_token_id = -1;  // written when >= 0
  std::string wiola_version;       // written when set
};
void write_hf_config(const std::string& path, const ModelConfig& c, const HfConfigExtras& x);
// Reads the model fields under their standard names or file keys; checks
// model_type and, when present, that head_dim is hidden_size / heads.
ModelConfig read_hf_config(const std::string& path);

}  // namespace wiola
