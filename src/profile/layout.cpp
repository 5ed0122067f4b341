#include "profile/layout.hpp"

#include <algorithm>
#include <sstream>

#include "model/flops.hpp"
#include "pipeline/wire.hpp"
#include "train/options.hpp"

namespace wiola::profile {

double RunLayout::stage_flops_per_token(int s) const {
  const StageSpec& st = stages.at(std::size_t(s));
  return 3.0 * forward_flops_per_token(model, st.first_layer, st.end_layer, s == pp - 1);
}

double RunLayout::message_bytes(int s) const {
  if (s >= pp - 1) return 0;
  // Summaries carried into a stage starting at layer b (StageModel::carry_count).
  const int b = stages.at(std::size_t(s)).end_layer;
  const int carry = boundary_carry(model, b);
  const BoundaryShape shape =
      boundary_shape(micro_batch, model.T, model.d, dtype, carry, model.summary, model.arch);
  return double(shape.header_bytes() + shape.payload_bytes());
}

std::int64_t RunLayout::stage_params(int s) const {
  return ParamLayout(model, stages.at(std::size_t(s))).total();
}

std::string RunLayout::describe() const {
  std::ostringstream os;
  os << "pp " << pp << " x dp " << dp << ", " << pipeline::schedule_kind_name(schedule)
     << ", zero " << zero << ", " << microbatches << " micro-batches of " << micro_batch
     << " x " << model.T << " tokens per replica, global batch " << global_batch;
  return os.str();
}

RunLayout layout_from(const TrainOptions& opts, const std::vector<StageSpec>& stages) {
  RunLayout l;
  l.model = opts.model;
  l.stages = stages;
  l.pp = opts.pp;
  l.dp = opts.dp;
  l.micro_batch = opts.micro_batch;
  l.microbatches = opts.micro_batches_per_rank();
  l.global_batch = opts.global_batch;
  l.zero = opts.zero;
  l.threads = opts.threads;
  l.schedule = opts.schedule;
  l.virtual_stages = opts.virtual_stages;
  l.dtype = opts.dtype;
  return l;
}

}  // namespace wiola::profile
