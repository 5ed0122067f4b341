#include "wiola-profile/cluster.hpp"

#include <algorithm>

namespace wiola::profile {

double Link::time(double bytes) const {
  return latency_s + (bandwidth_Bps > 0 ? bytes / bandwidth_Bps : 0.0);
}

Link Cluster::ring_link(const std::vector<int>& ranks) const {
  Link worst = intra;
  bool any = false;
  for (std::size_t i = 0; ranks.size() > 1 && i < ranks.size(); ++i) {
    const Link& l = between(ranks[i], ranks[(i + 1) % ranks.size()]);
    if (!any) {
      worst = l;
      any = true;
      continue;
    }
    worst.latency_s = std::max(worst.latency_s, l.latency_s);
    // A non-positive bandwidth is unlimited: any finite one is slower.
    if (l.bandwidth_Bps > 0 && (worst.bandwidth_Bps <= 0 || l.bandwidth_Bps < worst.bandwidth_Bps))
      worst.bandwidth_Bps = l.bandwidth_Bps;
  }
  return worst;
}

namespace {
double ring_steps(double bytes, int n, int steps, const Link& link) {
  if (n <= 1) return 0;
  return steps * link.time(bytes / n);
}
}  // namespace

double ring_allreduce_s(double bytes, int n, const Link& link) {
  return ring_steps(bytes, n, 2 * (n - 1), link);
}
double ring_reduce_scatter_s(double bytes, int n, const Link& link) {
  return ring_steps(bytes, n, n - 1, link);
}
double ring_allgather_s(double bytes, int n, const Link& link) {
  return ring_steps(bytes, n, n - 1, link);
}

}  // namespace wiola::profile
