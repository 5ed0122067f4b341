#include "pipeline/micro_batch_graphs.hpp"

#include <functional>
#include <utility>

#include "core/error.hpp"

namespace wiola {

namespace {

// A tensor of `t`'s shape and type, outside any graph's pool when called
// outside a capture: a graph's input, or a copy of its output.
Tensor like(Backend& be, const Tensor& t) {
  return t.defined() ? be.alloc_uninit(t.dtype(), t.rows(), t.cols()) : Tensor{};
}

void copy_into(Backend& be, const Tensor& src, const Tensor& dst) {
  if (src.defined()) be.copy(src, dst);
}

// Captures `work`, saying what failed where a capture is refused.
std::unique_ptr<DeviceGraph> capture(Backend& be, const char* what,
                                     const std::function<void()>& work) {
  try {
    return be.capture(work);
  } catch (const Error& e) {
    fail("CUDA graphs: capturing a micro-batch's ", what, " failed: ", e.what(),
         " (--cuda-graphs off runs every micro-batch eagerly)");
  }
}

}  // namespace

MicroBatchGraphs::MicroBatchGraphs(StageModel& model) : model_(model), be_(model.backend()) {
  require(be_.records_graphs(), "micro-batch graphs need a backend that records graphs, not ",
          be_.name());
}

MicroBatchGraphs::Key MicroBatchGraphs::key(int batch, int seq, double loss_scale) const {
  return {batch, seq, loss_scale, model_.params().params().data(),
          model_.params().grads().data()};
}

const MicroBatchGraphs::Ready* MicroBatchGraphs::ready(int chunk, const Key& key) const {
  const auto it = ready_.find(chunk);
  return it != ready_.end() && it->second.key == key ? &it->second : nullptr;
}

MicroBatchGraphs::Ready& MicroBatchGraphs::ready_for(int chunk, const Key& key) {
  Ready& r = ready_[chunk];
  if (!(r.key == key)) r = Ready{false, false, key};  // what ran before no longer counts
  return r;
}

bool MicroBatchGraphs::forward_ready(int chunk, const Key& key) const {
  const Ready* r = ready(chunk, key);
  return r && r->forward;
}

bool MicroBatchGraphs::backward_ready(int chunk, const Key& key) const {
  const Ready* r = ready(chunk, key);
  return r && r->backward;
}

void MicroBatchGraphs::ran_forward_eagerly(int chunk, const Key& key) {
  ready_for(chunk, key).forward = true;
}

void MicroBatchGraphs::ran_backward_eagerly(int chunk, const Key& key) {
  ready_for(chunk, key).backward = true;
}

int MicroBatchGraphs::take_slot(int chunk) {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (!slots_[i]->busy && slots_[i]->chunk == chunk) {
      slots_[i]->busy = true;
      return static_cast<int>(i);
    }
  slots_.push_back(std::make_unique<Slot>());
  slots_.back()->chunk = chunk;
  slots_.back()->busy = true;
  return static_cast<int>(slots_.size() - 1);
}

void MicroBatchGraphs::give_back_slot(int chunk, int index) {
  Slot& s = slot(index);
  require(s.busy && s.chunk == chunk, "micro-batch graphs: slot ", index, " of chunk ", chunk,
          " is not taken");
  s.busy = false;
}

MicroBatchGraphs::Slot& MicroBatchGraphs::slot(int index) {
  require(index >= 0 && static_cast<std::size_t>(index) < slots_.size(),
          "micro-batch graphs: no slot ", index);
  return *slots_[static_cast<std::size_t>(index)];
}

Tensor MicroBatchGraphs::fresh_copy(const Tensor& t) {
  const Tensor c = like(be_, t);
  copy_into(be_, t, c);
  return c;
}

void MicroBatchGraphs::capture_forward(Slot& s, const Key& key, const StageInput& in) {
  s.bwd = BackwardGraph{};  // it ran on the tensors of the forward graph that goes now
  s.fwd = ForwardGraph{};
  s.fwd.key = key;
  StageInput& g = s.fwd.in;
  g = in;
  g.tokens = like(be_, in.tokens);
  g.targets = like(be_, in.targets);
  g.x = like(be_, in.x);
  for (Tensor& c : g.carry) c = like(be_, c);
  g.loss_sum = like(be_, in.loss_sum);
  s.fwd.graph = capture(be_, "forward", [&] {
    s.fwd.out = model_.forward(g, /*training=*/true, s.fwd.saved, nullptr);
  });
  ++captures_;
}

StageOutput MicroBatchGraphs::forward(int index, const Key& key, const StageInput& in,
                                      StageSaved& saved) {
  Slot& s = slot(index);
  require(s.busy && s.chunk == in.chunk, "micro-batch graphs: slot ", index,
          " is not taken for chunk ", in.chunk);
  if (!s.fwd.graph || !(s.fwd.key == key)) capture_forward(s, key, in);
  StageInput& g = s.fwd.in;
  copy_into(be_, in.tokens, g.tokens);
  copy_into(be_, in.targets, g.targets);
  copy_into(be_, in.x, g.x);
  for (std::size_t i = 0; i < in.carry.size(); ++i) copy_into(be_, in.carry[i], g.carry[i]);
  if (g.loss_sum.defined()) be_.fill(g.loss_sum, 0.0);
  s.fwd.graph->replay();
  ++replays_;
  StageOutput out;
  out.x = fresh_copy(s.fwd.out.x);
  for (const Tensor& c : s.fwd.out.carry) out.carry.push_back(fresh_copy(c));
  if (in.loss_sum.defined()) {
    be_.copy(s.fwd.out.loss_sum, in.loss_sum);
    out.loss_sum = in.loss_sum;
  } else {
    out.loss_sum = fresh_copy(s.fwd.out.loss_sum);
  }
  saved = s.fwd.saved;
  return out;
}

void MicroBatchGraphs::capture_backward(Slot& s, const Key& key, const Tensor& dx_out,
                                        std::span<const Tensor> dcarry_out) {
  s.bwd = BackwardGraph{};
  s.bwd.key = key;
  s.bwd.dx_out = like(be_, dx_out);
  for (const Tensor& d : dcarry_out) s.bwd.dcarry_out.push_back(like(be_, d));
  StageSaved saved = s.fwd.saved;  // the backward consumes its copy
  s.bwd.graph = capture(be_, "backward", [&] {
    s.bwd.grads = model_.backward(s.bwd.dx_out, s.bwd.dcarry_out, key.loss_scale, saved,
                                  nullptr, /*split=*/false);
  });
  ++captures_;
}

StageGrads MicroBatchGraphs::backward(int index, const Key& key, const Tensor& dx_out,
                                      std::span<const Tensor> dcarry_out, StageSaved& saved) {
  Slot& s = slot(index);
  require(s.busy && s.fwd.graph && s.fwd.key == key, "micro-batch graphs: slot ", index,
          " holds no forward of this key to run backward");
  if (!s.bwd.graph || !(s.bwd.key == key)) capture_backward(s, key, dx_out, dcarry_out);
  copy_into(be_, dx_out, s.bwd.dx_out);
  for (std::size_t i = 0; i < dcarry_out.size(); ++i)
    copy_into(be_, dcarry_out[i], s.bwd.dcarry_out[i]);
  s.bwd.graph->replay();
  ++replays_;
  saved = StageSaved{};
  StageGrads out;
  out.dx = fresh_copy(s.bwd.grads.dx);
  for (const Tensor& d : s.bwd.grads.dcarry) out.dcarry.push_back(fresh_copy(d));
  return out;
}

}  // namespace wiola
