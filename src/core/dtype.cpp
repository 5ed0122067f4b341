#include "core/dtype.hpp"

#include "core/error.hpp"

namespace wiola {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::F64: return "fp64";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "f32" || s == "float32") return DType::F32;
  if (s == "fp64" || s == "f64" || s == "float64") return DType::F64;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "i32" || s == "int32") return DType::I32;
  fail("unknown dtype '", s, "' (expected fp32, fp64 or bf16)");
}

}  // namespace wiola
