#include "optim/adamw_optimizer.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "model/param_store.hpp"

namespace wiola {

AdamWOptimizer::AdamWOptimizer(Backend& backend, const ParamLayout& layout, DType dtype,
                               std::int64_t begin, std::int64_t end, AdamWConfig config)
    : backend_(backend), config_(config), begin_(begin), end_(end) {
  require(0 <= begin && begin <= end && end <= layout.total(), "optimizer range [", begin, ", ",
          end, ") outside the parameter buffer of ", layout.total());
  for (const ParamSpec& p : layout.entries()) {
    const std::int64_t lo = std::max(begin, p.offset), hi = std::min(end, p.offset + p.numel());
    if (lo >= hi) continue;
    if (!segments_.empty() && segments_.back().decay == p.decay &&
        segments_.back().offset + segments_.back().length == lo - begin)
      segments_.back().length += hi - lo;
    else
      segments_.push_back({lo - begin, hi - lo, p.decay});
  }
  const DType state = wide_dtype(dtype);
  m_ = backend.alloc(state, 1, end - begin);
  v_ = backend.alloc(state, 1, end - begin);
  if (state != dtype) master_ = backend.alloc(state, 1, end - begin);
}

void AdamWOptimizer::take_master_from(const Tensor& params) {
  if (master_.defined()) backend_.convert(params, master_);
}

void AdamWOptimizer::load_master(const std::vector<double>& values) {
  if (master_.defined()) from_host_f64(backend_, values, master_);
}

void AdamWOptimizer::step(const Tensor& params, const Tensor& grads, double lr,
                          double grad_scale, long step) {
  require(params.numel() == end_ - begin_ && grads.numel() == end_ - begin_,
          "optimizer step: tensors of ", params.numel(), " elements for a shard of ",
          end_ - begin_);
  const Tensor weights = master(params);
  for (const Segment& s : segments_) {
    Backend::AdamW h{lr, config_.beta1, config_.beta2, config_.eps,
                     s.decay ? config_.weight_decay : 0.0, grad_scale, step};
    backend_.adamw_step(h, weights.range(s.offset, s.length), grads.range(s.offset, s.length),
                        m_.range(s.offset, s.length), v_.range(s.offset, s.length));
  }
  if (master_.defined()) backend_.convert(master_, params);  // round into the bf16 weights
}

}  // namespace wiola
