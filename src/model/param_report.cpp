#include "model/param_report.hpp"

#include <cstdio>
#include <map>
#include <sstream>

#include "core/param_layout.hpp"

namespace wiola {

std::string describe_param_counts(const ModelConfig& c) {
  const ParamLayout layout(c, StageSpec::whole(c));
  // Per-layer components, summed over layers, keyed by role.
  std::map<std::string, std::int64_t> per_role;
  std::int64_t embed = 0, final_norm = 0;
  for (const ParamSpec& p : layout.entries()) {
    if (p.layer >= 0)
      per_role[std::string(param_names::layer_role(p.name))] += p.numel();
    else if (p.name == param_names::kEmbed)
      embed = p.numel();
    else
      final_norm += p.numel();  // final_norm.gamma and .delta
  }
  std::ostringstream os;
  auto line = [&](const std::string& what, std::int64_t n) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-34s %15lld\n", what.c_str(), static_cast<long long>(n));
    os << buf;
  };
  os << c.describe() << "\n";
  line(std::string(param_names::kEmbed) + " (tied head)", embed);
  for (const auto& [role, n] : per_role) line("layers.*." + role, n);
  line(param_names::kFinalNorm, final_norm);
  line("per layer", layer_param_count(c));
  line("total (exact)", param_count(c));
  line("chinchilla tokens (20 x total)", 20 * param_count(c));
  return os.str();
}

}  // namespace wiola
