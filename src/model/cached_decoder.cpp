#include "model/cached_decoder.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/param_names.hpp"
#include "ops/token_plan.hpp"

namespace wiola {

CachedDecoder::CachedDecoder(const StageModel& model)
    : model_(model), be_(model.backend()), c_(model.config()) {
  const StageSpec& spec = model.chunk(0);
  require(model.num_chunks() == 1 && spec.embed && spec.head && spec.first_layer == 0 &&
              spec.end_layer == c_.L,
          "the cached decoder needs the whole model on one stage, got layers [",
          spec.first_layer, ", ", spec.end_layer, ")");
  if (!c_.main_family()) {
    d13_ = std::make_unique<Wiola13mDecoder>(model);
    return;
  }
  const DType dt = model.dtype();
  const std::int64_t T = c_.T, kvd = std::int64_t(c_.Hkv) * c_.head_dim(),
                     hd = std::int64_t(c_.H) * c_.head_dim();
  for (int l = 0; l < c_.L; ++l) {
    kv_.push_back({be_.alloc(dt, T, kvd), be_.alloc(dt, T, kvd)});
    sums_.push_back(be_.alloc(DType::F64, 1, c_.d));
  }
  row64_ = be_.alloc(DType::F64, 1, c_.d);
  scratch_.q = be_.alloc(dt, T, hd);
  scratch_.o = be_.alloc(dt, T, hd);
  scratch_.o_self = be_.alloc(dt, T, hd);
  scratch_.o_ctx = be_.alloc(dt, T, hd);
  scratch_.lse_self = be_.alloc(wide_dtype(dt), T, c_.H);
  scratch_.lse_ctx = be_.alloc(wide_dtype(dt), T, c_.H);
}

void CachedDecoder::reset() {
  length_ = 0;
  if (d13_) {
    d13_->reset();
    return;
  }
  tokens_.clear();
  for (const Tensor& s : sums_) be_.fill(s, 0.0);
}

Tensor CachedDecoder::feed(std::span<const std::int32_t> tokens, bool last_only) {
  const std::int64_t n = static_cast<std::int64_t>(tokens.size());
  require(n >= 1, "feed: no tokens");
  require(length_ + n <= c_.T, "feed: positions ", length_, "..", length_ + n - 1,
          " pass the model context T = ", c_.T);
  for (std::int64_t i = 0; i < n; ++i)
    require(tokens[i] >= 0 && tokens[i] < c_.V, "feed: token id ", tokens[i],
            " is outside the vocabulary [0, ", c_.V, ")");
  const std::int64_t out_rows = last_only ? 1 : n;
  Tensor logits;
  if (d13_) {
    logits = feed_wiola13m(tokens, out_rows);
  } else if (exact()) {
    logits = run(tokens, length_, out_rows);
  } else {
    // Sequence summaries: the whole sequence again, from an empty cache.
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    logits = run(tokens_, 0, out_rows);
  }
  length_ += static_cast<int>(n);
  return logits;
}

// One step of the Wiola 13M decoder per token; the logits of the last
// out_rows tokens, in the model's dtype like the main family's.
Tensor CachedDecoder::feed_wiola13m(std::span<const std::int32_t> tokens, std::int64_t out_rows) {
  const std::int64_t n = static_cast<std::int64_t>(tokens.size());
  std::vector<double> rows;
  rows.reserve(static_cast<std::size_t>(out_rows * c_.V));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::vector<double> logits = d13_->step(tokens[i]);
    if (i >= n - out_rows) rows.insert(rows.end(), logits.begin(), logits.end());
  }
  const Tensor wide = be_.alloc(DType::F64, out_rows, c_.V);
  be_.from_host(rows.data(), wide);
  if (model_.dtype() == DType::F64) return wide;
  const Tensor out = be_.alloc(model_.dtype(), out_rows, c_.V);
  be_.convert(wide, out);
  return out;
}

Tensor CachedDecoder::summaries(int layer, const Tensor& x, int past) {
  const std::int64_t n = x.rows();
  if (c_.summary == SummaryMode::Sequence) {
    Tensor s = be_.alloc(model_.dtype(), 1, c_.d);
    be_.summary_fwd(SummaryMode::Sequence, x, 1, static_cast<int>(n), s);
    return s;
  }
  // s[p] = (Σ_{u<=p} X[u]) / (p + 1), the sum kept in double as the summary op does.
  const Tensor& sum = sums_[static_cast<std::size_t>(layer)];
  Tensor s = be_.alloc(model_.dtype(), n, c_.d);
  for (std::int64_t j = 0; j < n; ++j) {
    be_.convert(x.rows_slice(j, j + 1), row64_);
    be_.add(sum, row64_, sum);
    be_.copy(sum, row64_);
    be_.scale(row64_, 1.0 / static_cast<double>(past + j + 1));
    be_.convert(row64_, s.rows_slice(j, j + 1));
  }
  return s;
}

Tensor CachedDecoder::run(std::span<const std::int32_t> tokens, int past, std::int64_t out_rows) {
  const std::int64_t n = static_cast<std::int64_t>(tokens.size());
  const int d = c_.d;
  const ParamStore& params = model_.params();
  const auto plan = upload_plan(be_, decode_plan(past, static_cast<int>(n), c_.summary));

  Tensor ids = be_.alloc(DType::I32, n, 1);
  be_.from_host(tokens.data(), ids);
  Tensor x = be_.alloc(model_.dtype(), n, d);
  be_.embedding_fwd(ids, params.param(param_names::kEmbed), x);

  // Summaries of X_0 .. X_l for the new rows; layer l reads the last Λ of them.
  std::vector<Tensor> s;
  for (const DecoderLayer& layer : model_.layers()) {
    const int l = layer.index();
    s.push_back(summaries(l, x, past));
    const int first = std::max(0, l - c_.Lambda + 1);
    const std::span<const Tensor> ctx(s.data() + first, static_cast<std::size_t>(l - first + 1));
    x = layer.forward_cached(x, ctx, plan, past, kv_[static_cast<std::size_t>(l)], scratch_);
  }

  const Tensor last = x.rows_slice(n - out_rows, n);
  Tensor xf = be_.alloc(model_.dtype(), out_rows, d);
  Tensor rstd = be_.alloc(wide_dtype(model_.dtype()), out_rows, 1);
  be_.wrmsnorm_fwd(last, params.param(param_names::kFinalNormGamma),
                   params.param(param_names::kFinalNormDelta), c_.eps, xf, rstd);
  Tensor logits = be_.alloc(model_.dtype(), out_rows, c_.V);
  be_.linear_fwd(xf, params.param(param_names::kEmbed), logits, false);
  return logits;
}

}  // namespace wiola
