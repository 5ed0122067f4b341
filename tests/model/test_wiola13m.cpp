// Wiola 13M (arch wiola13m; ../shared/SPEC.md "The Wiola 13M variant") as a
// whole model: the preset's exact parameter count, the forward against a
// direct fp64 transcription of SPEC's formulas, the gradient of every
// parameter against finite differences (both gate sources), causality, stage
// splits that carry the activation alone, and recomputation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/error.hpp"
#include "core/param_names.hpp"
#include "model/decoder13m.hpp"
#include "model_test_util.hpp"
#include "support/gradcheck.hpp"

namespace wiola::test {
namespace {

ModelConfig tiny13m(GateSource gate = GateSource::Pre) {
  ModelConfig c = preset("wiola13m-tiny");  // d 16, L 5, H 4, Hkv 2, dff 24
  c.V = 29;
  c.T = 12;
  c.gate = gate;
  c.alpha = 0.3;     // a visible spiral
  c.init_std = 0.2;  // every path carries signal
  return c;
}

// Gives the parameters that start constant (gammas 1, the gate bias 0) random
// values, so a test also sees their paths.
void randomise_constants(StageModel& m, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (const ParamSpec& p : m.params().layout().entries()) {
    if (!param_names::is_vector_param(p.name)) continue;
    std::vector<double> v = m.params().get(p.name);
    for (double& x : v) x += u(gen);
    m.params().set(p.name, v);
  }
}

TEST(Wiola13mPreset, HasSpecsExactParameterCount) {
  const ModelConfig c = preset("wiola-13m");
  EXPECT_EQ(c.arch, Arch::Wiola13m);
  EXPECT_EQ(c.d, 256);
  EXPECT_EQ(c.L, 8);
  EXPECT_EQ(c.H, 8);
  EXPECT_EQ(c.Hkv, 8);
  EXPECT_EQ(c.head_dim(), 32);
  EXPECT_EQ(c.dff, 1024);
  EXPECT_EQ(c.V, 8192);
  EXPECT_EQ(c.T, 512);
  EXPECT_EQ(param_count(c), 12589888);
  const ParamLayout layout(c, StageSpec::whole(c));
  EXPECT_EQ(layout.parameters(), 12589888);
  // SPEC's names and shapes, in its order.
  std::vector<std::string> names;
  for (const ParamSpec& p : layout.entries())
    if (p.layer <= 0) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "embed.weight", "layers.0.attn_norm.gamma", "layers.0.attn.q_proj.weight",
                       "layers.0.attn.k_proj.weight", "layers.0.attn.v_proj.weight",
                       "layers.0.attn.o_proj.weight", "layers.0.attn.gate_w1.weight",
                       "layers.0.attn.gate_w2.weight", "layers.0.attn.gate_w2.bias",
                       "layers.0.ffn_norm.gamma", "layers.0.ffn.up.weight",
                       "layers.0.ffn.bypass.weight", "layers.0.ffn.down.weight",
                       "final_norm.gamma"}));
}

TEST(Wiola13mPreset, InitialisationFollowsSpec) {
  const ModelConfig c = preset("wiola13m-small");
  auto be = make_cpu_backend();
  StageModel m(*be, c, StageSpec::whole(c), DType::F64);
  m.params().init(3);
  auto stddev = [&](const std::string& n) {
    const auto v = m.params().get(n);
    double s = 0;
    for (double x : v) s += x * x;
    return std::sqrt(s / double(v.size()));
  };
  for (double x : m.params().get("layers.1.attn.gate_w2.bias")) EXPECT_EQ(x, 0.0);
  for (double x : m.params().get("layers.1.ffn_norm.gamma")) EXPECT_EQ(x, 1.0);
  EXPECT_NEAR(stddev("layers.1.ffn.up.weight"), 0.02, 0.002);
  const double out = 0.02 / std::sqrt(2.0 * c.L);
  EXPECT_NEAR(stddev("layers.1.ffn.down.weight"), out, 0.1 * out);
  EXPECT_NEAR(stddev("layers.1.attn.o_proj.weight"), out, 0.1 * out);
  EXPECT_NEAR(stddev("layers.1.attn.gate_w1.weight"), 0.02, 0.01);
}

// ---- an fp64 transcription of SPEC's Wiola 13M forward -----------------------

using Mat = std::vector<double>;  // row-major

// y [n, rows] = x [n, cols] · Wᵀ (W [rows, cols]).
Mat matmul_t(const Mat& x, std::size_t n, const Mat& w, std::size_t rows, std::size_t cols) {
  Mat y(n * rows, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t r = 0; r < rows; ++r) {
      double s = 0;
      for (std::size_t k = 0; k < cols; ++k) s += x[i * cols + k] * w[r * cols + k];
      y[i * rows + r] = s;
    }
  return y;
}

Mat rmsnorm(const Mat& x, std::size_t n, std::size_t d, const Mat& gamma, double eps) {
  Mat y(x.size());
  for (std::size_t i = 0; i < n; ++i) {
    double ms = 0;
    for (std::size_t k = 0; k < d; ++k) ms += x[i * d + k] * x[i * d + k];
    const double r = 1.0 / std::sqrt(ms / double(d) + eps);
    for (std::size_t k = 0; k < d; ++k) y[i * d + k] = gamma[k] * x[i * d + k] * r;
  }
  return y;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double silu(double x) { return x * sigmoid(x); }

// Logits [B*T, V] of one batch, straight from SPEC.
Mat reference_logits(const StageModel& m, const Batch& b) {
  const ModelConfig& c = m.config();
  const ParamStore& ps = m.params();
  const std::size_t d = c.d, H = c.H, Hkv = c.Hkv, dh = c.head_dim(), dff = c.dff, V = c.V,
                    T = b.T;
  auto P = [&](int l, const char* role) { return ps.get(param_names::layer_param(l, role)); };
  namespace role = param_names::role;
  const Mat E = ps.get(param_names::kEmbed);
  Mat all;
  for (int seq = 0; seq < b.B; ++seq) {
    Mat x(T * d);
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t k = 0; k < d; ++k)
        x[t * d + k] = E[std::size_t(b.inputs[seq * T + t]) * d + k];
    for (int l = 0; l < c.L; ++l) {
      const Mat xn = rmsnorm(x, T, d, P(l, role::kAttnNormGamma), c.eps);
      Mat q = matmul_t(xn, T, P(l, role::kQProj), H * dh, d);
      Mat k = matmul_t(xn, T, P(l, role::kKProj), Hkv * dh, d);
      const Mat v = matmul_t(xn, T, P(l, role::kVProj), Hkv * dh, d);
      const Mat q_pre = q;
      auto rope = [&](Mat& u, std::size_t heads) {
        for (std::size_t t = 0; t < T; ++t)
          for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t i = 0; i < dh / 2; ++i) {
              const double theta = std::pow(c.theta0, -2.0 * double(i) / double(dh));
              const double phi = 1.0 + c.alpha * std::sqrt(double(i) + 1) / std::sqrt(dh / 2.0);
              const double ang = double(t) * theta * phi;
              double& a = u[t * heads * dh + h * dh + 2 * i];
              double& bb = u[t * heads * dh + h * dh + 2 * i + 1];
              const double a0 = a, b0 = bb;
              a = a0 * std::cos(ang) - b0 * std::sin(ang);
              bb = a0 * std::sin(ang) + b0 * std::cos(ang);
            }
      };
      rope(q, H);
      rope(k, Hkv);
      const Mat& gsrc = c.gate == GateSource::Pre ? q_pre : q;
      const Mat W1 = P(l, role::kGateW1), W2 = P(l, role::kGateW2), b2 = P(l, role::kGateW2Bias);
      Mat z(T * H * dh, 0.0);
      Mat msum(dh, 0.0);
      for (std::size_t t = 0; t < T; ++t) {
        for (std::size_t j = 0; j < dh; ++j) {
          double mj = 0;
          for (std::size_t h = 0; h < H; ++h) mj += gsrc[t * H * dh + h * dh + j];
          msum[j] += mj / double(H);
        }
        Mat ct(dh), hid(H), g(H);
        for (std::size_t j = 0; j < dh; ++j) ct[j] = msum[j] / double(t + 1);
        for (std::size_t h = 0; h < H; ++h) {
          double s = 0;
          for (std::size_t j = 0; j < dh; ++j) s += W1[h * dh + j] * ct[j];
          hid[h] = silu(s);
        }
        for (std::size_t h = 0; h < H; ++h) {
          double s = b2[h];
          for (std::size_t j = 0; j < H; ++j) s += W2[h * H + j] * hid[j];
          g[h] = sigmoid(s);
        }
        for (std::size_t h = 0; h < H; ++h) {
          const std::size_t grp = h % Hkv;
          std::vector<double> sc(t + 1);
          double mx = -1e300;
          for (std::size_t u = 0; u <= t; ++u) {
            double dot = 0;
            for (std::size_t j = 0; j < dh; ++j)
              dot += q[t * H * dh + h * dh + j] * k[u * Hkv * dh + grp * dh + j];
            sc[u] = g[h] * dot / std::sqrt(double(dh));
            mx = std::max(mx, sc[u]);
          }
          double den = 0;
          for (double& e : sc) den += (e = std::exp(e - mx));
          for (std::size_t u = 0; u <= t; ++u)
            for (std::size_t j = 0; j < dh; ++j)
              z[t * H * dh + h * dh + j] += sc[u] / den * v[u * Hkv * dh + grp * dh + j];
        }
      }
      const Mat a = matmul_t(z, T, P(l, role::kOProj), d, H * dh);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += a[i];
      const Mat xn2 = rmsnorm(x, T, d, P(l, role::kFfnNormGamma), c.eps);
      const Mat ab = matmul_t(xn2, T, P(l, role::kUp), 2 * dff, d);
      const Mat bp = matmul_t(xn2, T, P(l, role::kBypass), dff, d);
      Mat r(T * dff);
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t j = 0; j < dff; ++j)
          r[t * dff + j] =
              silu(ab[t * 2 * dff + j]) * ab[t * 2 * dff + dff + j] + bp[t * dff + j];
      const Mat f = matmul_t(r, T, P(l, role::kDown), d, dff);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += f[i];
    }
    const Mat xf = rmsnorm(x, T, d, ps.get(param_names::kFinalNormGamma), c.eps);
    const Mat logits = matmul_t(xf, T, E, V, d);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

class Wiola13mGate : public ::testing::TestWithParam<GateSource> {};

TEST_P(Wiola13mGate, ForwardMatchesSpecTranscription) {
  const ModelConfig c = tiny13m(GetParam());
  WholeModel m(c, DType::F64);
  randomise_constants(*m.model, 5);
  const Batch b = make_batch(2, c.T, c.V, 17);
  const auto got = m.logits(b, true);
  const auto want = reference_logits(*m.model, b);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  EXPECT_LE(worst, 1e-11 * scale) << "largest logit " << scale;
}

TEST_P(Wiola13mGate, GradientsMatchFiniteDifferences) {
  const ModelConfig c = tiny13m(GetParam());
  WholeModel m(c, DType::F64);
  randomise_constants(*m.model, 6);
  const Batch b = make_batch(2, c.T, c.V, 11);
  m.loss_and_grads(b, true);
  ParamStore& ps = m.model->params();
  double diff2 = 0, ana2 = 0, worst = 0;
  std::string worst_name;
  struct One {
    std::string name;
    double diff, scale;
  };
  std::vector<One> all;
  for (const ParamSpec& p : ps.layout().entries()) {
    const GradCheckResult r = check_gradient(
        *m.be, ps.param(p.name), [&] { return m.loss(b, true); }, ps.get_grad(p.name),
        kDefaultStep, 6);
    const double scale = std::max(r.analytic_norm, r.numeric_norm);
    all.push_back({p.name, r.rel_error * scale, scale});
    diff2 += all.back().diff * all.back().diff;
    ana2 += r.analytic_norm * r.analytic_norm;
  }
  for (const One& o : all) {
    const double rel = o.diff / std::max(o.scale, 1e-3 * std::sqrt(ana2));
    if (rel >= worst) {
      worst = rel;
      worst_name = o.name;
    }
  }
  std::printf("[gradcheck] wiola13m gate=%s: global rel error %.3e, worst parameter %s %.3e\n",
              std::string(gate_source_name(c.gate)).c_str(), std::sqrt(diff2 / ana2),
              worst_name.c_str(), worst);
  EXPECT_LE(std::sqrt(diff2 / ana2), 1e-6);
  EXPECT_LE(worst, 1e-6) << worst_name;
}

INSTANTIATE_TEST_SUITE_P(PreAndPost, Wiola13mGate,
                         ::testing::Values(GateSource::Pre, GateSource::Post));

TEST(Wiola13mGateSource, PreAndPostDiffer) {
  Batch b = make_batch(1, 12, 29, 3);
  WholeModel pre(tiny13m(GateSource::Pre), DType::F64), post(tiny13m(GateSource::Post), DType::F64);
  EXPECT_NE(pre.logits(b, false), post.logits(b, false));
}

// SPEC's causality contract for this family: changing a later token leaves
// every earlier position's logits unchanged (bit for bit), and changes the
// logits at and after it.
TEST(Wiola13mCausality, LaterTokensNeverReachEarlierLogits) {
  const ModelConfig c = tiny13m();
  WholeModel m(c, DType::F64);
  randomise_constants(*m.model, 8);
  const Batch base = make_batch(2, c.T, c.V, 21);
  const auto ref = m.logits(base, true);
  for (int t : {0, 3, 7, c.T - 1}) {
    Batch b = base;
    for (int s = 0; s < b.B; ++s) {
      std::int32_t& tok = b.inputs[std::size_t(s) * c.T + t];
      tok = (tok + 5) % c.V;
    }
    const auto got = m.logits(b, true);
    for (int s = 0; s < b.B; ++s)
      for (int u = 0; u < c.T; ++u) {
        const std::size_t row = (std::size_t(s) * c.T + u) * c.V;
        const bool same = std::equal(got.begin() + row, got.begin() + row + c.V, ref.begin() + row);
        if (u < t) {
          EXPECT_TRUE(same) << "position " << u << " sees token " << t;
        } else if (u == t) {
          EXPECT_FALSE(same) << "position " << u << " ignores its own token";
        }
      }
  }
}

// Two or more stages: the boundary carries the activation alone, and the
// chain reproduces the whole model's loss and gradients.
TEST(Wiola13mStages, ChainCarriesTheActivationAloneAndEqualsWholeModel) {
  const ModelConfig c = tiny13m();
  WholeModel whole(c, DType::F64);
  const Batch b = make_batch(2, c.T, c.V, 13);
  const double ref = whole.loss_and_grads(b, true);
  for (const std::vector<int>& split : {std::vector<int>{1, 4}, {2, 3}, {1, 1, 1, 1, 1}}) {
    std::vector<std::unique_ptr<StageModel>> stages;
    int first = 0;
    for (std::size_t s = 0; s < split.size(); ++s) {
      StageSpec spec{first, first + split[s], s == 0, s + 1 == split.size()};
      stages.push_back(std::make_unique<StageModel>(*whole.be, c, spec, DType::F64));
      stages.back()->params().init(7);
      EXPECT_EQ(stages.back()->carry_count(first), 0);
      first += split[s];
    }
    std::vector<StageSaved> saved(stages.size());
    StageOutput out;
    for (std::size_t s = 0; s < stages.size(); ++s) {
      stages[s]->params().zero_grads();
      StageInput si;
      si.batch = b.B;
      si.seq = b.T;
      if (s == 0) si.tokens = upload_i32(*whole.be, b.inputs);
      if (s + 1 == stages.size()) si.targets = upload_i32(*whole.be, b.targets);
      if (s > 0) si.x = out.x;
      out = stages[s]->forward(si, true, saved[s]);
      if (s + 1 < stages.size()) {
        EXPECT_TRUE(out.carry.empty());
      }
    }
    EXPECT_NEAR(loss_sum(*whole.be, out) / b.tokens(), ref, 1e-12 * std::abs(ref));
    StageGrads g;
    for (int s = int(stages.size()) - 1; s >= 0; --s) {
      g = stages[s]->backward(g.dx, g.dcarry, 1.0 / b.tokens(), saved[s]);
      EXPECT_TRUE(g.dcarry.empty());
    }
    for (const ParamSpec& p : whole.model->params().layout().entries()) {
      std::vector<double> sum(std::size_t(p.numel()), 0.0);
      for (auto& st : stages)
        if (st->params().has(p.name)) {
          const auto gg = st->params().get_grad(p.name);
          for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += gg[i];
        }
      const auto r = whole.model->params().get_grad(p.name);
      double num = 0, den = 1e-30;
      for (std::size_t i = 0; i < r.size(); ++i) {
        num += (r[i] - sum[i]) * (r[i] - sum[i]);
        den += r[i] * r[i];
      }
      EXPECT_LE(std::sqrt(num / den), 1e-10) << p.name << " in a split of " << split.size();
    }
  }
}

TEST(Wiola13mRecompute, GradientsAreBitIdentical) {
  const ModelConfig c = tiny13m();
  const Batch b = make_batch(2, c.T, c.V, 22);
  std::vector<double> grads[2];
  for (int pass = 0; pass < 2; ++pass) {
    WholeModel m(c, DType::F32);
    m.model->set_recompute(pass == 1);
    m.loss_and_grads(b, true);
    grads[pass] = to_host_f64(*m.be, m.model->params().grads());
  }
  EXPECT_EQ(grads[0], grads[1]);
}

// Paper 002's exactness claim: the cached decoder (keys, values, the running
// sum of m) gives the full forward's logits at every position.
//
// Up to rounding, stated: the decoder's products have one row, the full
// forward's T rows, and a BLAS kernel may sum a dot product's K terms in
// another order for another row count (OPENBLAS_CORETYPE=Haswell's does:
// 1.3e-15 apart in fp64; the detected AVX-512 kernel gives equal bits). An
// element of a product then moves by at most 2·γ_K·Σ_k|a_k·b_k|, with
// γ_K = K·u/(1 − K·u) and u the unit roundoff (Higham, Accuracy and Stability
// of Numerical Algorithms, Thm 3.1). The logits sit behind at most 6 products
// per layer and the head's; counting each product's move at first order, with
// Σ|a_k·b_k| taken as at most 4 times the largest logit (the tiny model's
// activations are of the logits' size), the two differ by at most
//   (6·L + 1) · 2·γ_K · 4 · max|logit|,   K = max(d, dff, V).
// That is 8e-13 of the largest logit in fp64 and 4e-4 in fp32 (measured under
// Haswell's kernels: 6e-16 and 3e-7), far below what a decoder that loses,
// repeats or misplaces a key gives (1e-2 and up).
double rounding_allowance(const ModelConfig& c, DType dtype, double largest_logit) {
  const double u = dtype == DType::F64 ? 0x1p-53 : 0x1p-24;
  const double K = std::max({c.d, c.dff, c.V});
  const double gamma = K * u / (1 - K * u);
  return (6.0 * c.L + 1) * 2 * gamma * 4 * largest_logit;
}

class Wiola13mCachedDecoder : public ::testing::TestWithParam<std::tuple<DType, GateSource>> {};

TEST_P(Wiola13mCachedDecoder, EqualsTheFullForward) {
  const auto [dtype, gate] = GetParam();
  const ModelConfig c = tiny13m(gate);
  WholeModel m(c, dtype);
  randomise_constants(*m.model, 9);
  const Batch b = make_batch(1, c.T, c.V, 31);
  const auto full = m.logits(b, false);
  Wiola13mDecoder dec(*m.model);
  double worst = 0, scale = 0;
  for (int t = 0; t < c.T; ++t) {
    const auto got = dec.step(b.inputs[std::size_t(t)]);
    ASSERT_EQ(got.size(), std::size_t(c.V));
    for (int v = 0; v < c.V; ++v) {
      const double want = full[std::size_t(t) * c.V + v];
      worst = std::max(worst, std::abs(got[std::size_t(v)] - want));
      scale = std::max(scale, std::abs(want));
    }
  }
  const double allowance = rounding_allowance(c, dtype, scale);
  std::printf("[decoder] %s gate=%s: max |cached - full| %.3e (largest logit %.3e, allowed %.3e)\n",
              std::string(dtype_name(dtype)).c_str(), std::string(gate_source_name(gate)).c_str(),
              worst, scale, allowance);
  EXPECT_LE(worst, allowance);
  EXPECT_EQ(dec.position(), c.T);
  EXPECT_THROW(dec.step(0), Error);  // the context is full
  dec.reset();
  EXPECT_EQ(dec.position(), 0);
  const auto first = dec.step(b.inputs[0]);
  for (int v = 0; v < c.V; ++v)
    EXPECT_LE(std::abs(first[std::size_t(v)] - full[std::size_t(v)]), allowance) << v;
}

INSTANTIATE_TEST_SUITE_P(DtypesAndGates, Wiola13mCachedDecoder,
                         ::testing::Combine(::testing::Values(DType::F64, DType::F32),
                                            ::testing::Values(GateSource::Pre, GateSource::Post)));

}  // namespace
}  // namespace wiola::test
