#include "train/memory_plan.hpp"

#include <algorithm>
#include <cstdio>

#include "backend/backend.hpp"
#include "partition/cost_model.hpp"

namespace wiola {

namespace {
constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
}

std::string MemoryEstimate::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%.2f GiB (weights %.2f, gradients %.2f, optimizer %.2f, activations %.2f for %d "
                "micro-batch%s%s, head %.2f, workspace %.2f)",
                total() / GiB, weights / GiB, gradients / GiB, optimizer / GiB, activations / GiB,
                in_flight, in_flight == 1 ? "" : "es", chunks > 1 ? " of one chunk" : "",
                head / GiB, workspace / GiB);
  std::string out = buf;
  if (graphs > 0) {
    std::snprintf(buf, sizeof buf, ", graphs %.2f", graphs / GiB);
    out.insert(out.size() - 1, buf);
  }
  return out;
}

MemoryEstimate estimate_memory(const MemoryPlanInput& in) {
  const ModelConfig& c = in.model;
  const double params = double(ParamLayout(c, in.chunks).total());
  const double compute = double(dtype_size(in.dtype));
  const double wide = double(dtype_size(wide_dtype(in.dtype)));
  const bool master = wide_dtype(in.dtype) != in.dtype;
  const double owned = in.zero >= 1 ? params / in.dp : params;

  MemoryEstimate e;
  e.weights = params * compute;
  // The full gradient buffer during backward, plus ZeRO's reduced shard.
  e.gradients = params * wide + (in.zero >= 1 ? owned * wide : 0.0);
  // AdamW's two moments, and the fp32 master copy of bf16 weights.
  e.optimizer = owned * wide * (master ? 3.0 : 2.0);

  e.chunks = static_cast<int>(in.chunks.size());
  e.in_flight = pipeline::peak_in_flight(pipeline::make_schedule(
      in.schedule, in.pp, in.stage_index, in.microbatches, e.chunks));
  const double tokens = double(in.micro_batch) * c.T;
  // Each held (micro-batch, chunk) keeps one chunk's layers: the stage's
  // layers over its chunks on average.
  int held_layers = 0;
  for (const StageSpec& k : in.chunks) held_layers += k.num_layers();
  const double layers = double(held_layers) / e.chunks;
  const bool head = in.chunks.back().head;
  const double per_layer = activation_elements_per_token_per_layer(c);
  // Recompute keeps each layer's input and its summary per micro-batch in
  // flight; the one layer being recomputed holds its full activations once.
  e.activations = in.recompute
                      ? (layers * 2.0 * c.d * e.in_flight + per_layer) * tokens * compute
                      : layers * per_layer * tokens * compute * e.in_flight;
  // The last stage's final-norm input and output for each micro-batch in
  // flight, with its logits (their gradient in place) on the CPU; a device's
  // loss keeps no logits but the input gradient its forward made, and makes
  // the logits a block of rows at a time in fp32, with their compute-dtype
  // gradient (Backend::head_loss_keeps_no_logits).
  if (head && in.device)
    e.head = 3.0 * c.d * tokens * compute * e.in_flight +
             std::min(double(Backend::kHeadLossBlockBytes), double(c.V) * tokens * (4.0 + compute));
  else if (head)
    e.head = (double(c.V) + 2.0 * c.d) * tokens * compute * e.in_flight;
  // Transients of one layer's backward, and the GEMM workspace on a device.
  e.workspace = per_layer * tokens * compute + (in.device ? 32.0 * 1024 * 1024 : 0.0);
  // A micro-batch graph keeps what its capture released for its own replays:
  // at most one slot per micro-batch in flight, each with a forward's and a
  // backward's transients (a layer's each, as the workspace above) and, on
  // the last stage, the loss's block of logits the forward makes.
  if (in.device && in.cuda_graphs && in.microbatches > 1)
    e.graphs = e.in_flight *
               (2.0 * per_layer * tokens * compute +
                (head ? std::min(double(Backend::kHeadLossBlockBytes),
                                 double(c.V) * tokens * (4.0 + compute))
                      : 0.0));
  return e;
}

}  // namespace wiola
