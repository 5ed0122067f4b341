#pragma once
// What a step does at a stage's layer boundaries besides the model's own
// math: the one seam through which the step's communication overlaps the
// layers. StageModel calls it; ZeroOptimizer (train/zero_optimizer.hpp) is
// what a training step gives it, and the executor decides when:
//   before_layer_forward(l)  before layer l's forward in every micro-batch
//                            (-1: before the embedding or the head first use
//                            their parameters). ZeRO waits there for layer
//                            l's parameter all-gather, started the step before.
//   layer_grads_final(l)     right after layer l's parameter gradients are
//                            complete in a backward (or a split backward's W)
//                            that the executor marks as the chunk's last of
//                            the step. ZeRO-2 starts layer l's gradient
//                            reduce-scatter there.
// Nothing else crosses from the trainer into the executor and the model.
namespace wiola {

class LayerBoundaries {
 public:
  virtual ~LayerBoundaries() = default;
  virtual void before_layer_forward(int layer) = 0;
  virtual void layer_grads_final(int layer) = 0;
};

}  // namespace wiola
