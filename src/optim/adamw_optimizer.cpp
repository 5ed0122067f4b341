#include "optim/adamw_optimizer.hpp"

#include <algorithm>

#include "core/error.hpp"

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
  m_ = backend.alloc(dtype, 1, end - begin);
  v_ = backend.alloc(dtype, 1, end - begin);
}

void AdamWOptimizer::step(const Tensor& params, const Tensor& grads, double lr,
                          double grad_scale, long step) {
  require(params.numel() == end_ - begin_ && grads.numel() == end_ - begin_,
          "optimizer step: tensors of ", params.numel(), " elements for a shard of ",
          end_ - begin_);
  for (const Segment& s : segments_) {
    Backend::AdamW h{lr, config_.beta1, config_.beta2, config_.eps,
                     s.decay ? config_.weight_decay : 0.0, grad_scale, step};
    backend_.adamw_step(h, params.range(s.offset, s.length), grads.range(s.offset, s.length),
                        m_.range(s.offset, s.length), v_.range(s.offset, s.length));
  }
}

}  // namespace wiola
