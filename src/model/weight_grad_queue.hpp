#pragma once
// The weight gradients a split backward leaves for later (zero-bubble
// schedules, pipeline/schedule.hpp): B computes the gradients of a chunk's
// inputs and queues each linear's dW += dYᵀ X here, holding the two tensors
// it reads; W runs the queue in the order B filled it, so every parameter
// gradient sums the same terms in the same order as an unsplit backward.
// The small parameters (norm scales, the context logit, the embedding
// scatter) are done in B: only the GEMMs are worth moving.
#include <vector>

#include "backend/backend.hpp"
#include "model/layer_boundaries.hpp"

namespace wiola {

class WeightGradQueue {
 public:
  void add(const Tensor& dy, const Tensor& x, const Tensor& dw) { items_.push_back({dy, x, dw, -2}); }
  // Marks that every weight gradient of `layer` (-1: the head) is queued.
  void layer_done(int layer) { items_.push_back({{}, {}, {}, layer}); }
  bool empty() const { return items_.empty(); }

  // Runs the queued products; boundaries->layer_grads_final(l), when given,
  // after each layer's.
  void run(Backend& be, LayerBoundaries* boundaries) {
    for (const Item& it : items_) {
      if (it.layer != -2) {
        if (boundaries && it.layer >= 0) boundaries->layer_grads_final(it.layer);
        continue;
      }
      be.linear_bwd_weight(it.dy, it.x, it.dw);
    }
    items_.clear();
  }

 private:
  struct Item {
    Tensor dy, x, dw;
    int layer;  // -2: a product; otherwise a layer-done marker
  };
  std::vector<Item> items_;
};

// dw += dyᵀ x now, or later when `queue` is set.
inline void linear_weight_grad(Backend& be, WeightGradQueue* queue, const Tensor& dy,
                               const Tensor& x, const Tensor& dw) {
  if (queue)
    queue->add(dy, x, dw);
  else
    be.linear_bwd_weight(dy, x, dw);
}

}  // namespace wiola
