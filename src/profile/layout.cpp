#include "profile/layout.hpp"

#include <algorithm>
#include <sstream>

#include "model/flops.hpp"
#include "partition/partition.hpp"
#include "pipeline/wire.hpp"
#include "train/options.hpp"

namespace wiola::profile {

std::vector<int> RunLayout::chunks_of(int s) const {
  std::vector<int> out;
  for (int c = 0; c < std::max(virtual_stages, 1); ++c) out.push_back(c * pp + s);
  return out;
}

double RunLayout::stage_flops_per_token(int k) const {
  const StageSpec& st = stages.at(std::size_t(k));
  return 3.0 * forward_flops_per_token(model, st.first_layer, st.end_layer,
                                       k == int(stages.size()) - 1);
}

double RunLayout::message_bytes(int k) const {
  if (k >= int(stages.size()) - 1) return 0;
  // Summaries carried into a stage starting at layer b (StageModel::carry_count).
  const int b = stages.at(std::size_t(k)).end_layer;
  const int carry = boundary_carry(model, b);
  const BoundaryShape shape =
      boundary_shape(micro_batch, model.T, model.d, dtype, carry, model.summary, model.arch);
  return double(shape.header_bytes() + shape.payload_bytes());
}

std::int64_t RunLayout::stage_params(int k) const {
  return ParamLayout(model, stages.at(std::size_t(k))).total();
}

double RunLayout::rank_flops_per_token(int s) const {
  double sum = 0;
  for (int k : chunks_of(s)) sum += stage_flops_per_token(k);
  return sum;
}

double RunLayout::rank_message_bytes(int s) const {
  double sum = 0;
  for (int k : chunks_of(s)) sum += message_bytes(k);
  return sum;
}

std::vector<StageSpec> RunLayout::rank_chunks(int s) const { return stage_chunks(stages, pp, s); }

std::int64_t RunLayout::rank_params(int s) const {
  if (virtual_stages <= 1) return stage_params(s);
  return ParamLayout(model, rank_chunks(s)).total();
}

std::string RunLayout::rank_layers(int s) const { return chunk_layers_text(rank_chunks(s)); }

std::string RunLayout::describe() const {
  std::ostringstream os;
  os << "pp " << pp << " x dp " << dp << ", " << pipeline::schedule_kind_name(schedule);
  if (virtual_stages > 1) os << " (" << virtual_stages << " chunks per stage)";
  os << ", zero " << zero << ", " << microbatches << " micro-batches of " << micro_batch
     << " x " << model.T << " tokens per replica, global batch " << global_batch;
  return os.str();
}

RunLayout layout_from(const TrainOptions& opts, const std::vector<StageSpec>& stages) {
  RunLayout l;
  l.model = opts.model.config;
  l.stages = stages;
  l.pp = opts.parallel.pp;
  l.dp = opts.parallel.dp;
  l.micro_batch = opts.parallel.micro_batch;
  l.microbatches = opts.parallel.micro_batches_per_rank();
  l.global_batch = opts.parallel.global_batch;
  l.zero = opts.parallel.zero;
  l.threads = opts.device.threads;
  l.schedule = opts.parallel.schedule;
  l.virtual_stages = opts.parallel.virtual_stages;
  l.dtype = opts.device.dtype;
  return l;
}

}  // namespace wiola::profile
