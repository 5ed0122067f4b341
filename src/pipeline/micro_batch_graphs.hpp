#pragma once
// CUDA graphs of a stage's micro-batches (Backend::capture), which the
// executor keeps from step to step. A training step asks for the same shapes
// every step, so after a micro-batch of a chunk has run eagerly once, its
// forward and backward can each replay a graph instead of queuing a few
// dozen kernels and products a layer from the host.
//
// A graph writes the same tensors at every replay: its inputs (copied in
// before the replay), what the forward keeps for the backward, and its
// outputs (copied out after, so a transfer still in flight never sees the
// next replay's values). So a micro-batch takes a *slot* of its chunk when
// its forward replays and gives it back when its backward is complete; a
// slot has one forward graph and one backward graph, and there are as many
// slots as micro-batches of the chunk are between forward and backward at
// once (up to the stage count under 1F1B).
//
// What a graph takes from the host when it is captured -- the shapes, the
// loss scale, the addresses of the parameters and their gradients -- is its
// Key; a slot whose key no longer holds is captured again.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "model/stage_model.hpp"

namespace wiola {

class MicroBatchGraphs {
 public:
  struct Key {
    int batch = 0, seq = 0;
    double loss_scale = 0;
    const void* params = nullptr;
    const void* grads = nullptr;
    bool operator==(const Key&) const = default;
  };

  explicit MicroBatchGraphs(StageModel& model);

  // The key of a training micro-batch of the model as it is now.
  Key key(int batch, int seq, double loss_scale) const;
  // Whether a forward (backward) of `chunk` with `key` has run eagerly since
  // the key last changed: what a first run fills (cuBLASLt's choices, the
  // model's plans) must not be first filled inside a capture, where no
  // device work runs.
  bool forward_ready(int chunk, const Key& key) const;
  bool backward_ready(int chunk, const Key& key) const;
  void ran_forward_eagerly(int chunk, const Key& key);
  void ran_backward_eagerly(int chunk, const Key& key);

  int take_slot(int chunk);
  void give_back_slot(int chunk, int slot);

  // The forward of `in` through the slot's graph (captured first where it
  // has none for `key`). `saved` receives what the backward needs: the
  // graph's tensors, valid until the slot's next forward. Outputs are fresh
  // tensors; the loss is written to in.loss_sum (zero before the call).
  StageOutput forward(int slot, const Key& key, const StageInput& in, StageSaved& saved);
  // The backward of the micro-batch a forward replayed in `slot` (no split,
  // no boundaries: the executor runs those eagerly).
  StageGrads backward(int slot, const Key& key, const Tensor& dx_out,
                      std::span<const Tensor> dcarry_out, StageSaved& saved);

  // Graphs captured and replayed so far (each capture, each replay counted once).
  std::int64_t captures() const { return captures_; }
  std::int64_t replays() const { return replays_; }

 private:
  struct ForwardGraph {
    Key key;
    StageInput in;  // the graph's inputs, written before each replay
    StageSaved saved;
    StageOutput out;
    std::unique_ptr<DeviceGraph> graph;
  };
  struct BackwardGraph {
    Key key;
    Tensor dx_out;
    std::vector<Tensor> dcarry_out;
    StageGrads grads;
    std::unique_ptr<DeviceGraph> graph;
  };
  struct Slot {
    int chunk = 0;
    bool busy = false;
    ForwardGraph fwd;
    BackwardGraph bwd;
  };
  struct Ready {
    bool forward = false, backward = false;
    Key key;
  };

  // The chunk's record for `key`, or null where it holds another key.
  const Ready* ready(int chunk, const Key& key) const;
  // The chunk's record, started afresh when it held another key.
  Ready& ready_for(int chunk, const Key& key);
  void capture_forward(Slot& s, const Key& key, const StageInput& in);
  void capture_backward(Slot& s, const Key& key, const Tensor& dx_out,
                        std::span<const Tensor> dcarry_out);
  Slot& slot(int index);
  Tensor fresh_copy(const Tensor& t);

  StageModel& model_;
  Backend& be_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::map<int, Ready> ready_;  // [chunk]
  std::int64_t captures_ = 0, replays_ = 0;
};

}  // namespace wiola
