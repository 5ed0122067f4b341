#include "backend/timed_backend.hpp"

#include <algorithm>

namespace wiola {

std::string TimedBackend::family_of(const std::string& op) {
  static const std::pair<const char*, const char*> kFamilies[] = {
      {"linear", "linear (GEMM)"},
      {"attention", "attention"},
      {"wrmsnorm", "norm"},
      {"srpe", "srpe"},
      {"head_", "gates and activations"},
      {"sigmoid_mul", "gates and activations"},
      {"silu_mul", "gates and activations"},
      {"gelu", "gates and activations"},
      {"fusion", "gates and activations"},
      {"summary", "summaries"},
      {"row_cosine", "atm"},
      {"merge_rows", "atm"},
      {"cross_entropy", "loss"},
      {"embedding", "embedding"},
      {"adamw", "optimizer"},
      {"sum", "reductions"},
      {"add", "residual and axpy"},
      {"axpy", "residual and axpy"},
      {"scale", "residual and axpy"},
  };
  for (const auto& [prefix, family] : kFamilies)
    if (op.rfind(prefix, 0) == 0) return family;
  return "memory and transfers";
}

std::vector<TimedBackend::Entry> TimedBackend::table() const {
  std::vector<Entry> out;
  for (const auto& [op, s] : seconds_) out.push_back({op, family_of(op), s, calls_.at(op)});
  std::sort(out.begin(), out.end(),
            [](const Entry& a, const Entry& b) { return a.seconds > b.seconds; });
  return out;
}

}  // namespace wiola
