#pragma once
// The Hugging Face side of the world: safetensors files (an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype, shape
// and byte range, then the raw little-endian data) and a `config.json` with
// model_type "wiola", the SPEC's hyper-parameters and the canonical names.
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

// Writes F32 or F64 tensors (atomic: temp name, then rename).
void write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors,
                       DType dtype, const std::map<std::string, std::string>& metadata);
// Reads every tensor (F64, F32, BF16 and F16 are converted to double). Throws
// naming the file and the problem for a malformed header or byte range.
std::vector<SafeTensor> read_safetensors(const std::string& path);

void write_hf_config(const std::string& path, const ModelConfig& c,
                     const std::vector<std::string>& names, DType dtype);
ModelConfig read_hf_config(const std::string& path);

}  // namespace wiola
