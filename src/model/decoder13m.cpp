#include "model/decoder13m.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/param_names.hpp"
#include "ops/spiral_rope_table.hpp"

namespace wiola {

Wiola13mDecoder::Wiola13mDecoder(const StageModel& model)
    : model_(model), be_(model.backend()), c_(model.config()), dtype_(model.dtype()) {
  require(!c_.main_family(), "the cached decoder is for arch wiola13m, not ", arch_name(c_.arch));
  const StageSpec& s = model.chunk(0);
  require(model.num_chunks() == 1 && s.embed && s.head && s.first_layer == 0 && s.end_layer == c_.L,
          "the cached decoder needs the whole model on one stage");
  std::vector<double> cos_tab, sin_tab;
  spiral_rope_coefficients(c_.T, c_.head_dim(), c_.theta0, c_.alpha, cos_tab, sin_tab);
  cos_ = be_.alloc(wide_dtype(dtype_), c_.T, c_.head_dim() / 2);
  sin_ = be_.alloc(wide_dtype(dtype_), c_.T, c_.head_dim() / 2);
  from_host_f64(be_, cos_tab, cos_);
  from_host_f64(be_, sin_tab, sin_);
  q_all_ = alloc(c_.T, std::int64_t(c_.H) * c_.head_dim());
  reset();
}

Tensor Wiola13mDecoder::alloc(std::int64_t rows, std::int64_t cols) const {
  return be_.alloc(dtype_, rows, cols);
}

void Wiola13mDecoder::reset() {
  pos_ = 0;
  if (!layers_.empty()) {  // rows at and past pos_ are written before they are read
    for (LayerCache& l : layers_) std::fill(l.msum.begin(), l.msum.end(), 0.0);
    return;
  }
  const std::int64_t kvd = std::int64_t(c_.Hkv) * c_.head_dim();
  layers_.assign(static_cast<std::size_t>(c_.L), {});
  for (LayerCache& l : layers_) {
    l.k = alloc(c_.T, kvd);
    l.v = alloc(c_.T, kvd);
    l.msum.assign(static_cast<std::size_t>(c_.head_dim()), 0.0);
  }
  pos_ = 0;
}

std::vector<double> Wiola13mDecoder::step(std::int32_t token) {
  require(pos_ < c_.T, "cached decoder: the context of T = ", c_.T, " positions is full");
  require(token >= 0 && token < c_.V, "cached decoder: token ", token, " is outside [0, ", c_.V,
          ")");
  namespace role = param_names::role;
  const ParamStore& ps = model_.params();
  const int d = c_.d, H = c_.H, dh = c_.head_dim();
  const std::int64_t hd = std::int64_t(H) * dh, dff = c_.dff;
  const int p = pos_;
  auto i32 = [&](std::int32_t v) {
    Tensor t = be_.alloc(DType::I32, 1, 1);
    be_.from_host(&v, t);
    return t;
  };
  const Tensor tok = i32(token), position = i32(p), zero_row = be_.alloc(DType::I32, 1, 1);
  // One query (row 0) that sees keys [0, p]; rows 1..p of the block are padding.
  AttentionIndex index;
  index.n_queries = i32(1);
  index.key_prefix = be_.alloc(DType::I32, p + 1, 1);
  be_.from_host(std::vector<std::int32_t>(std::size_t(p) + 1, p + 1).data(), index.key_prefix);
  index.key_extra = be_.alloc(DType::I32, p + 1, 1);
  be_.fill(index.key_extra, -1.0);
  index.ctx_row = be_.alloc(DType::I32, p + 1, 1);

  Tensor x = alloc(1, d);
  be_.embedding_fwd(tok, ps.param(param_names::kEmbed), x);
  Tensor one = alloc(1, H);
  be_.fill(one, 1.0);
  for (int l = 0; l < c_.L; ++l) {
    LayerCache& cache = layers_[std::size_t(l)];
    auto P = [&](const char* r) { return ps.param(param_names::layer_param(l, r)); };
    Tensor xn = alloc(1, d), rstd = be_.alloc(wide_dtype(dtype_), 1, 1);
    be_.wrmsnorm_fwd(x, P(role::kAttnNormGamma), Tensor{}, c_.eps, xn, rstd);
    Tensor q_pre = alloc(1, hd), q = alloc(1, hd);
    be_.linear_fwd(xn, P(role::kQProj), q_pre, false);
    be_.srpe_fwd(q_pre, position, cos_, sin_, dh, RotaryPairs::Interleaved, q);
    const Tensor k = cache.k.rows_slice(p, p + 1), v = cache.v.rows_slice(p, p + 1);
    be_.linear_fwd(xn, P(role::kKProj), k, false);
    be_.srpe_fwd(k, position, cos_, sin_, dh, RotaryPairs::Interleaved, k);
    be_.linear_fwd(xn, P(role::kVProj), v, false);

    // The gate from the running sum of m (in double, as the summary op keeps it).
    Tensor m = alloc(1, dh);
    be_.head_mean_fwd(c_.gate == GateSource::Pre ? q_pre : q, dh, m);
    const std::vector<double> mh = to_host_f64(be_, m);
    std::vector<double> ch(mh.size());
    const double inv = 1.0 / static_cast<double>(p + 1);
    for (std::size_t j = 0; j < mh.size(); ++j) {
      cache.msum[j] += mh[j];
      ch[j] = cache.msum[j] * inv;
    }
    Tensor cvec = alloc(1, dh);
    from_host_f64(be_, ch, cvec);
    Tensor u = alloc(1, H), su = alloc(1, H), glog = alloc(1, H), g = alloc(1, H);
    be_.linear_fwd(cvec, P(role::kGateW1), u, false);
    be_.silu_mul_fwd(u, one, su);
    be_.embedding_fwd(zero_row, P(role::kGateW2Bias), glog);
    be_.linear_fwd(su, P(role::kGateW2), glog, true);
    be_.sigmoid_mul_fwd(glog, one, g);
    const Tensor qs = q_all_.rows_slice(0, p + 1);
    be_.head_scale_fwd(q, g, dh, qs.rows_slice(0, 1));

    const AttentionDims dims{1, p + 1, H, c_.Hkv, dh};
    Tensor o = alloc(p + 1, hd), lse = be_.alloc(wide_dtype(dtype_), p + 1, H);
    be_.attention_fwd(dims, qs, cache.k.rows_slice(0, p + 1), cache.v.rows_slice(0, p + 1), {},
                      {}, Tensor{}, index, o, o, Tensor{}, lse, Tensor{});
    Tensor a = alloc(1, d);
    be_.linear_fwd(o.rows_slice(0, 1), P(role::kOProj), a, false);
    Tensor xh = alloc(1, d);
    be_.add(x, a, xh);

    Tensor xn2 = alloc(1, d), rstd2 = be_.alloc(wide_dtype(dtype_), 1, 1);
    be_.wrmsnorm_fwd(xh, P(role::kFfnNormGamma), Tensor{}, c_.eps, xn2, rstd2);
    Tensor ab = alloc(1, 2 * dff), r = alloc(1, dff), f = alloc(1, d);
    be_.linear_fwd(xn2, P(role::kUp), ab, false);
    be_.silu_mul_fwd(ab.cols_slice(0, dff), ab.cols_slice(dff, 2 * dff), r);
    be_.linear_fwd(xn2, P(role::kBypass), r, true);
    be_.linear_fwd(r, P(role::kDown), f, false);
    x = alloc(1, d);
    be_.add(xh, f, x);
  }
  Tensor xf = alloc(1, d), rstd = be_.alloc(wide_dtype(dtype_), 1, 1);
  be_.wrmsnorm_fwd(x, ps.param(param_names::kFinalNormGamma), Tensor{}, c_.eps, xf, rstd);
  Tensor logits = alloc(1, c_.V);
  be_.linear_fwd(xf, ps.param(param_names::kEmbed), logits, false);
  ++pos_;
  return to_host_f64(be_, logits);
}

}  // namespace wiola
