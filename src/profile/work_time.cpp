#include "profile/work_time.hpp"

namespace wiola::profile {

Work work_of(const DeviceCounts& c, double per) {
  return {double(c.gemm_flops) / per, double(c.attention_flops) / per,
          double(c.non_gemm_bytes()) / per, double(c.device_operations()) / per};
}

WorkTime time_of(const Work& w, const Ceilings& c) {
  WorkTime t;
  t.gemm_s = w.gemm_flops / c.gemm_flops_per_s;
  t.attention_s = w.attention_flops / c.attention_flops_per_s;
  t.memory_s = w.bytes / c.memory_Bps;
  t.operations_s = w.operations * c.operation_s;
  return t;
}

}  // namespace wiola::profile
