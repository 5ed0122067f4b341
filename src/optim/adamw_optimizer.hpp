#pragma once
// AdamW over a range of a stage's flat parameter buffer. Without ZeRO the
// range is the whole buffer; with ZeRO each data-parallel rank owns one shard
// of it and keeps moments (and, with bf16 weights, the fp32 master copy) only
// for that shard. Weight decay applies per parameter as the layout says
// (matrices and the embedding; not γ, δ, φ).
//
// Master weights: with fp32 (or fp64) parameters the update is applied to the
// parameters themselves; with bf16 parameters to an fp32 master copy of the
// range, which is then rounded into the bf16 parameters.
#include <cstdint>
#include <vector>

#include "backend/backend.hpp"
#include "core/param_layout.hpp"

namespace wiola {

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
};

class AdamWOptimizer {
 public:
  // Owns moments for elements [begin, end) of the flat buffer described by layout.
  AdamWOptimizer(Backend& backend, const ParamLayout& layout, DType dtype, std::int64_t begin,
                 std::int64_t end, AdamWConfig config);

  std::int64_t begin() const { return begin_; }
  std::int64_t end() const { return end_; }
  // params: a view of exactly [begin, end) (1 x (end-begin)) of the
  // parameters; grads: the gradients of that range (wide dtype).
  void step(const Tensor& params, const Tensor& grads, double lr, double grad_scale, long step);

  // The weights the optimizer updates for `params` (the view of its range):
  // the fp32 master copy when there is one, else `params` itself.
  Tensor master(const Tensor& params) const { return master_.defined() ? master_ : params; }
  // After the parameters changed outside the optimizer (imported weights):
  // the master copy takes their values.
  void take_master_from(const Tensor& params);
  // From a checkpoint: the master copy gets these values (end-begin of them);
  // without a master copy the parameters already hold them.
  void load_master(const std::vector<double>& values);

  const Tensor& exp_avg() const { return m_; }
  const Tensor& exp_avg_sq() const { return v_; }

 private:
  struct Segment {
    std::int64_t offset, length;  // relative to begin
    bool decay;
  };
  Backend& backend_;
  AdamWConfig config_;
  std::int64_t begin_, end_;
  std::vector<Segment> segments_;  // runs of equal decay flag
  Tensor m_, v_;
  Tensor master_;  // bf16 parameters only
};

}  // namespace wiola
