#pragma once
// The self-describing weights file (docs/data-format.md): one dataset per
// canonical parameter at the root (matrices 2-D [rows, cols], vectors 1-D),
// float32 or float64, with the model's hyper-parameters as root attributes.
// Written by `wiola-train --export-weights`, read by `wiola-dump`.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/model_config.hpp"

namespace wiola {

inline constexpr const char* kWeightsFormat = "wiola-weights";

struct NamedArray {
  std::string name;
  std::int64_t rows = 0;  // 1 for vectors
  std::int64_t cols = 0;
  std::vector<double> data;  // row-major, rows * cols
};

// Writes atomically (temp name, then rename). file_dtype is F32 or F64.
void write_weights_file(const std::string& path, const ModelConfig& config,
                        const std::vector<NamedArray>& arrays, DType file_dtype);

struct WeightsFile {
  ModelConfig config;               // preset = "file", validated
  std::vector<NamedArray> arrays;   // every canonical parameter, in canonical order
};

// Reads and checks a weights file: the hyper-parameters must validate and every
// parameter of the whole model must be present with its shape; errors name the
// file and the parameter. Datasets that are not parameters are ignored.
WeightsFile read_weights_file(const std::string& path);

// Reads dataset `tokens` (any integer type, 2-D [B, T+1]) as int32.
std::vector<std::int32_t> read_token_matrix(const std::string& path, std::int64_t& rows,
                                            std::int64_t& cols);

}  // namespace wiola
