#include "train/zero_optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace wiola {

ZeroOptimizer::ZeroOptimizer(StageModel& model, ZeroGroups groups, int zero_stage,
                             AdamWConfig adam, bool count_embedding_in_norm)
    : model_(model), g_(groups), stage_(zero_stage), count_embedding_(count_embedding_in_norm) {
  require(zero_stage >= 0 && zero_stage <= 2, "--zero must be 0, 1 or 2, got ", zero_stage);
  if (g_.data) {
    dp_ = g_.data->size();
    dp_rank_ = g_.data->rank();
  }
  const ParamLayout& layout = model.params().layout();
  total_ = layout.total();
  for (int r = 0; r < dp_; ++r) shard_starts_.push_back(zero_shard(total_, dp_, r).first);
  shard_starts_.push_back(total_);
  shard_begin_ = shard_starts_[dp_rank_];
  shard_end_ = shard_starts_[dp_rank_ + 1];

  // Buckets: one per layer (a layer's parameters and the padding between them
  // are contiguous), and each run of the others (embedding, final norm) with
  // only padding between them.
  // Indexed by layer over the whole model: a stage's chunks need not be adjacent.
  layer_buckets_.resize(std::size_t(model.config().L));
  for (auto& b : layer_buckets_) b.begin = b.end = -1;
  for (const ParamSpec& p : layout.entries()) {
    if (p.layer >= 0) {
      Bucket& b = layer_buckets_[std::size_t(p.layer)];
      if (b.begin < 0) b.begin = p.offset;
      b.end = p.offset + p.numel();
    } else if (!other_buckets_.empty() &&
               align_up(other_buckets_.back().end, kAlignElements) == p.offset) {
      other_buckets_.back().end = p.offset + p.numel();
    } else {
      other_buckets_.push_back({p.offset, p.offset + p.numel(), nullptr, nullptr});
    }
  }

  const std::int64_t opt_begin = stage_ == 0 ? 0 : shard_begin_;
  const std::int64_t opt_end = stage_ == 0 ? total_ : shard_end_;
  adam_ = std::make_unique<AdamWOptimizer>(model.backend(), layout, model.dtype(), opt_begin,
                                           opt_end, adam);
  adam_->take_master_from(model.params().params().range(opt_begin, opt_end - opt_begin));
  if (stage_ >= 1)
    shard_grads_ =
        model.backend().alloc(wide_dtype(model.dtype()), 1, shard_end_ - shard_begin_);
}

ZeroOptimizer::~ZeroOptimizer() {
  // Never leave a collective pending on the way out.
  for (auto* list : {&layer_buckets_, &other_buckets_})
    for (auto& b : *list) {
      if (b.pending) b.pending->wait();
      if (b.gathering) b.gathering->wait();
    }
}

std::vector<std::size_t> ZeroOptimizer::shard_counts(std::int64_t begin, std::int64_t end) const {
  std::vector<std::size_t> counts(dp_);
  for (int r = 0; r < dp_; ++r) {
    const std::int64_t lo = std::max(begin, shard_starts_[r]);
    const std::int64_t hi = std::min(end, shard_starts_[r + 1]);
    counts[r] = hi > lo ? static_cast<std::size_t>(hi - lo) : 0;
  }
  return counts;
}

// Reduce-scatter one bucket of the full gradient into this rank's shard.
void ZeroOptimizer::start_bucket(Bucket& b) {
  const Tensor send = model_.params().grads().range(b.begin, b.end - b.begin);
  const std::vector<std::size_t> counts = shard_counts(b.begin, b.end);
  // Where this rank's part of the bucket lands in its shard.
  const std::int64_t lo = std::clamp(b.begin, shard_begin_, shard_end_);
  const Tensor recv = shard_grads_.range(lo - shard_begin_,
                                         static_cast<std::int64_t>(counts[dp_rank_]));
  b.pending = g_.data->ireduce_scatter(send, recv, counts, comm::ReduceOp::Sum);
}

void ZeroOptimizer::layer_grads_final(int layer) {
  if (stage_ < 2 || dp_ == 1) return;
  start_bucket(layer_buckets_.at(std::size_t(layer)));
  // MPI progresses non-blocking collectives only inside MPI calls: poke the
  // pending ones so they advance while the backward continues.
  for (auto& b : layer_buckets_)
    if (b.pending) b.pending->test();
}

void ZeroOptimizer::reduce_grads() {
  ParamStore& store = model_.params();
  const Tensor grads = store.grads();
  // The tied embedding: first and last stage hold copies; sum their gradients.
  if (g_.embedding && g_.embedding->size() > 1 && store.has(param_names::kEmbed))
    g_.embedding->allreduce(store.grad(param_names::kEmbed), comm::ReduceOp::Sum);
  if (dp_ == 1) {
    if (stage_ >= 1)
      model_.backend().copy(grads.range(shard_begin_, shard_end_ - shard_begin_), shard_grads_);
  } else if (stage_ == 0) {
    g_.data->allreduce(grads, comm::ReduceOp::Sum);
  } else if (stage_ == 1) {
    g_.data->reduce_scatter(grads, shard_grads_, shard_counts(0, total_), comm::ReduceOp::Sum);
  } else {
    for (auto& b : other_buckets_) start_bucket(b);
    for (auto* list : {&layer_buckets_, &other_buckets_})
      for (auto& b : *list) {
        if (b.begin < 0) continue;  // a layer of another stage
        require(b.pending != nullptr, "ZeRO-2: a gradient bucket was never reduced");
        b.pending->wait();
        b.pending.reset();
      }
    store.release_grads();  // only the shard is kept from here to the next step
  }
  reduced_ = true;
}

void ZeroOptimizer::add_owned_sum_squares(const Tensor& acc) {
  require(reduced_, "gradient norm before the gradient reduction");
  // Count the elements of this rank's shard; the last stage leaves out its
  // copy of the tied embedding so it is counted once (on the first stage).
  Backend& be = model_.backend();
  const ParamLayout& layout = model_.params().layout();
  std::int64_t skip_begin = 0, skip_end = 0;
  if (!count_embedding_ && layout.contains(param_names::kEmbed)) {
    const ParamSpec& e = layout.find(param_names::kEmbed);
    skip_begin = e.offset;
    skip_end = e.offset + e.numel();
  }
  auto add_range = [&](std::int64_t lo, std::int64_t hi) {
    if (hi <= lo) return;
    be.sum_squares(stage_ >= 1 ? shard_grads_.range(lo - shard_begin_, hi - lo)
                               : model_.params().grads().range(lo, hi - lo),
                   acc);
  };
  // Parameter elements only: the layout's padding is no parameter.
  for (const auto& [lo, hi] : layout.element_runs(shard_begin_, shard_end_)) {
    add_range(lo, std::min(hi, skip_begin));
    add_range(std::max(lo, skip_end), hi);
  }
}

void ZeroOptimizer::take_master_from_params() {
  adam_->take_master_from(
      model_.params().params().range(adam_->begin(), adam_->end() - adam_->begin()));
}

Tensor ZeroOptimizer::master() const {
  return adam_->master(
      model_.params().params().range(adam_->begin(), adam_->end() - adam_->begin()));
}

void ZeroOptimizer::step(double lr, double grad_scale) {
  require(reduced_, "optimizer step before the gradient reduction");
  reduced_ = false;
  ++updates_;
  ParamStore& store = model_.params();
  const std::int64_t b = adam_->begin(), n = adam_->end() - adam_->begin();
  const Tensor params = store.params();
  adam_->step(params.range(b, n), stage_ >= 1 ? shard_grads_ : store.grads().range(b, n), lr,
              grad_scale, updates_);
  if (stage_ >= 1 && dp_ > 1) {
    // In the order the next forward needs them: embedding (and the head's), then layers.
    for (auto& bucket : other_buckets_) start_gather(bucket);
    for (auto& bucket : layer_buckets_)
      if (bucket.begin >= 0) start_gather(bucket);
  }
}

// All-gather one bucket of the parameters in place: every rank contributes
// the part of the bucket its shard holds.
void ZeroOptimizer::start_gather(Bucket& b) {
  const Tensor params = model_.params().params();
  const std::vector<std::size_t> counts = shard_counts(b.begin, b.end);
  const std::int64_t mine = std::clamp(b.begin, shard_begin_, shard_end_);
  b.gathering = g_.data->iallgather(
      params.range(mine, static_cast<std::int64_t>(counts[dp_rank_])),
      params.range(b.begin, b.end - b.begin), counts);
}

void ZeroOptimizer::wait_for_params(int layer) {
  auto wait = [](Bucket& b) {
    if (b.gathering) {
      b.gathering->wait();
      b.gathering.reset();
    }
  };
  if (layer < 0) {
    for (auto& b : other_buckets_) wait(b);
  } else {
    wait(layer_buckets_.at(std::size_t(layer)));
  }
}

void ZeroOptimizer::finish_gathers() {
  wait_for_params(-1);
  for (int l : model_.held_layers()) wait_for_params(l);
}

// A step whose gradient norm is not finite takes no update: the reduction is
// consumed, nothing else changes.
void ZeroOptimizer::skip_step() {
  require(reduced_, "optimizer step before the gradient reduction");
  reduced_ = false;
}

}  // namespace wiola
