#include "backend/device_counts.hpp"

#include <cmath>
#include <cstdio>

namespace wiola {

namespace {

DeviceCounts combine(const DeviceCounts& a, const DeviceCounts& b, int sign) {
  DeviceCounts d;
  d.launches = a.launches + sign * b.launches;
  d.gemms = a.gemms + sign * b.gemms;
  d.memsets = a.memsets + sign * b.memsets;
  d.memset_bytes = a.memset_bytes + sign * b.memset_bytes;
  d.copies = a.copies + sign * b.copies;
  d.host_syncs = a.host_syncs + sign * b.host_syncs;
  d.allocations = a.allocations + sign * b.allocations;
  d.kernel_bytes = a.kernel_bytes + sign * b.kernel_bytes;
  d.device_copy_bytes = a.device_copy_bytes + sign * b.device_copy_bytes;
  d.floor_bytes = a.floor_bytes + sign * b.floor_bytes;
  d.gemm_flops = a.gemm_flops + sign * b.gemm_flops;
  d.attention_flops = a.attention_flops + sign * b.attention_flops;
  d.graph_launches = a.graph_launches + sign * b.graph_launches;
  return d;
}

// A count, or a mean of counts: whole numbers as such.
std::string count(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v == std::floor(v) ? "%.0f" : "%.1f", v);
  return buf;
}

}  // namespace

DeviceCounts operator-(const DeviceCounts& after, const DeviceCounts& before) {
  return combine(after, before, -1);
}

DeviceCounts operator+(const DeviceCounts& a, const DeviceCounts& b) { return combine(a, b, 1); }

std::string describe_counts(const DeviceCounts& c, double per) {
  const auto n = [&](std::int64_t v) { return count(double(v) / per); };
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "launches %4s (GEMMs %3s, kernels %3s), memsets %3s (%.0f kB), copies %2s, "
                "host syncs %2s, allocations %3s, non-GEMM %7.2f MB (floor %7.2f MB, x %.2f), "
                "GEMMs %.4g GFLOP, attention tiles %.4g GFLOP",
                n(c.launches + c.gemms).c_str(), n(c.gemms).c_str(), n(c.launches).c_str(),
                n(c.memsets).c_str(), double(c.memset_bytes) / per / 1024, n(c.copies).c_str(),
                n(c.host_syncs).c_str(), n(c.allocations).c_str(),
                double(c.non_gemm_bytes()) / per / 1e6, double(c.floor_bytes) / per / 1e6,
                c.floor_ratio(), double(c.gemm_flops) / per / 1e9,
                double(c.attention_flops) / per / 1e9);
  std::string out = buf;
  if (c.graph_launches) out += ", graph launches " + n(c.graph_launches);
  return out;
}

}  // namespace wiola
