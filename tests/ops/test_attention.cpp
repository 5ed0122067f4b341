// attention_fwd / attention_bwd: the GCLA core. Forward against a naive fp64
// reference, backward against finite differences of Σ r ⊙ O for every input
// (q, k, v, each ctx_k / ctx_v, φ), under the index maps the model uses:
// plain causal, an ATM-like map (short prefix plus one extra key), padding
// rows, one or two summaries read per position or broadcast per sequence, and
// GQA with H = 4, Hkv = 2 where head h reads group h % Hkv.
#include <limits>

#include "op_test_util.hpp"

namespace wiola::test {
namespace {

struct AttnCase {
  std::string name;
  AttentionDims dims;
  std::vector<std::int32_t> nq, prefix, extra, crow;
  int n_ctx = 2;
  std::int64_t ctx_rows = 0;  // rows of every context tensor
  std::int64_t n() const { return static_cast<std::int64_t>(dims.batch) * dims.seq; }
  std::int64_t qw() const { return static_cast<std::int64_t>(dims.heads) * dims.head_dim; }
  std::int64_t kw() const { return static_cast<std::int64_t>(dims.kv_heads) * dims.head_dim; }
};

enum class Ctx { PerPosition, PerSequence };

// key_prefix/key_extra come from `map(t)`; context rows per position or per sequence.
template <class Map>
AttnCase make_case(std::string name, int B, int T, int n_ctx, Ctx ctx,
                   std::vector<std::int32_t> nq, Map map) {
  AttnCase c;
  c.name = std::move(name);
  c.dims = {B, T, 4, 2, 4};
  c.nq = std::move(nq);
  c.n_ctx = n_ctx;
  c.ctx_rows = ctx == Ctx::PerPosition ? static_cast<std::int64_t>(B) * T : B;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const auto [p, e] = map(t);
      c.prefix.push_back(p);
      c.extra.push_back(e);
      c.crow.push_back(ctx == Ctx::PerPosition ? b * T + t : b);
    }
  return c;
}

std::pair<int, int> causal_map(int t) { return {t + 1, -1}; }
// ATM-like: a shorter prefix of merged keys plus the query's own unmerged key
// stored further down the block (T = 6: extra rows 3..5).
std::pair<int, int> atm_map(int t) { return {(t + 1) / 2, 3 + t / 2}; }

struct AttnInputs {
  std::vector<double> q, k, v, phi;
  std::vector<std::vector<double>> ck, cv;
};

AttnInputs random_inputs(const AttnCase& c, std::uint64_t seed) {
  AttnInputs in;
  in.q = random_vector(c.n() * c.qw(), seed, -1.5, 1.5);
  in.k = random_vector(c.n() * c.kw(), seed + 1, -1.5, 1.5);
  in.v = random_vector(c.n() * c.kw(), seed + 2);
  for (int i = 0; i < c.n_ctx; ++i) {
    in.ck.push_back(random_vector(c.ctx_rows * c.kw(), seed + 3 + 2 * i, -1.5, 1.5));
    in.cv.push_back(random_vector(c.ctx_rows * c.kw(), seed + 4 + 2 * i));
  }
  in.phi = {-0.4};  // β ≈ 0.4: both branches matter
  return in;
}

struct AttnOut {
  std::vector<double> o, os, oc, ls, lc;
};

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Naive fp64 reference. wrong_groups uses h / (H/Hkv) instead of h % Hkv.
AttnOut ref_attention(const AttnCase& c, const AttnInputs& in, bool wrong_groups = false) {
  const int B = c.dims.batch, T = c.dims.seq, H = c.dims.heads, G = c.dims.kv_heads,
            dh = c.dims.head_dim;
  const std::int64_t qw = c.qw(), kw = c.kw();
  const double beta = sigmoid(in.phi[0]), scale = 1.0 / std::sqrt(static_cast<double>(dh));
  AttnOut r{zeros(c.n() * qw), zeros(c.n() * qw), zeros(c.n() * qw), zeros(c.n() * H),
            zeros(c.n() * H)};
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < c.nq[b]; ++t)
      for (int h = 0; h < H; ++h) {
        const int i = b * T + t, g = wrong_groups ? h / (H / G) : h % G;
        auto qdot = [&](const std::vector<double>& keys, std::int64_t row) {
          double s = 0;
          for (int d = 0; d < dh; ++d) s += in.q[i * qw + h * dh + d] * keys[row * kw + g * dh + d];
          return s * scale;
        };
        // Visible keys: the prefix, then the extra row unless already in it.
        std::vector<std::int64_t> rows;
        for (int j = 0; j < c.prefix[i]; ++j) rows.push_back(b * T + j);
        if (c.extra[i] >= c.prefix[i]) rows.push_back(b * T + c.extra[i]);
        auto attend = [&](const std::vector<double>& scores, auto value_row, double* out,
                          double& lse) {
          double m = -std::numeric_limits<double>::infinity(), l = 0;
          for (double s : scores) m = std::max(m, s);
          for (double s : scores) l += std::exp(s - m);
          for (std::size_t j = 0; j < scores.size(); ++j) {
            const double p = std::exp(scores[j] - m) / l;
            const double* vr = value_row(j);
            for (int d = 0; d < dh; ++d) out[d] += p * vr[d];
          }
          lse = m + std::log(l);
        };
        std::vector<double> s;
        for (std::int64_t row : rows) s.push_back(qdot(in.k, row));
        attend(s, [&](std::size_t j) { return &in.v[rows[j] * kw + g * dh]; },
               &r.os[i * qw + h * dh], r.ls[i * H + h]);
        if (c.n_ctx == 0) {  // no context: O = O_self, no context statistics
          for (int d = 0; d < dh; ++d) r.o[i * qw + h * dh + d] = r.os[i * qw + h * dh + d];
          continue;
        }
        std::vector<double> sc;
        for (int x = 0; x < c.n_ctx; ++x) sc.push_back(qdot(in.ck[x], c.crow[i]));
        attend(sc, [&](std::size_t x) { return &in.cv[x][c.crow[i] * kw + g * dh]; },
               &r.oc[i * qw + h * dh], r.lc[i * H + h]);
        for (int d = 0; d < dh; ++d)
          r.o[i * qw + h * dh + d] =
              (1 - beta) * r.os[i * qw + h * dh + d] + beta * r.oc[i * qw + h * dh + d];
      }
  return r;
}

// Backend tensors of one case in one dtype.
struct AttnTensors {
  Tensor q, k, v, phi;
  std::vector<Tensor> ck, cv;
  AttentionIndex index;
};

AttnTensors upload_case(Backend& be, DType dt, const AttnCase& c, const AttnInputs& in) {
  AttnTensors t;
  t.q = upload(be, dt, c.n(), c.qw(), in.q);
  t.k = upload(be, dt, c.n(), c.kw(), in.k);
  t.v = upload(be, dt, c.n(), c.kw(), in.v);
  t.phi = upload(be, dt, 1, 1, in.phi);
  for (int x = 0; x < c.n_ctx; ++x) {
    t.ck.push_back(upload(be, dt, c.ctx_rows, c.kw(), in.ck[x]));
    t.cv.push_back(upload(be, dt, c.ctx_rows, c.kw(), in.cv[x]));
  }
  t.index = {upload_index(be, c.nq), upload_index(be, c.prefix), upload_index(be, c.extra),
             upload_index(be, c.crow)};
  return t;
}

struct FwdTensors {
  Tensor o, os, oc, ls, lc;
};

FwdTensors alloc_fwd(Backend& be, DType dt, const AttnCase& c) {
  return {be.alloc(dt, c.n(), c.qw()), be.alloc(dt, c.n(), c.qw()), be.alloc(dt, c.n(), c.qw()),
          be.alloc(dt, c.n(), c.dims.heads), be.alloc(dt, c.n(), c.dims.heads)};
}

void forward(Backend& be, const AttnCase& c, const AttnTensors& t, const FwdTensors& f) {
  be.attention_fwd(c.dims, t.q, t.k, t.v, t.ck, t.cv, t.phi, t.index, f.o, f.os, f.oc, f.ls, f.lc);
}

AttnOut run_fwd(Backend& be, DType dt, const AttnCase& c, const AttnInputs& in) {
  const AttnTensors t = upload_case(be, dt, c, in);
  const FwdTensors f = alloc_fwd(be, dt, c);
  forward(be, c, t, f);
  return {read(be, f.o), read(be, f.os), read(be, f.oc), read(be, f.ls), read(be, f.lc)};
}

struct AttnGrad {
  std::vector<double> dq, dk, dv, dphi;
  std::vector<std::vector<double>> dck, dcv;
  std::vector<double> all() const {  // everything, for bit comparisons
    std::vector<double> a = dq;
    for (const auto* p : {&dk, &dv, &dphi}) a.insert(a.end(), p->begin(), p->end());
    for (const auto& x : dck) a.insert(a.end(), x.begin(), x.end());
    for (const auto& x : dcv) a.insert(a.end(), x.begin(), x.end());
    return a;
  }
};

// Forward then backward with dO = d_o; gradient outputs start as `prefill`
// (dφ starts as dphi0).
AttnGrad run_bwd(Backend& be, DType dt, const AttnCase& c, const AttnInputs& in,
                 const std::vector<double>& d_o, double prefill = 0.0, double dphi0 = 0.0) {
  const AttnTensors t = upload_case(be, dt, c, in);
  const FwdTensors f = alloc_fwd(be, dt, c);
  forward(be, c, t, f);
  Tensor dq = be.alloc(dt, c.n(), c.qw()), dk = be.alloc(dt, c.n(), c.kw()),
         dv = be.alloc(dt, c.n(), c.kw()), dphi = upload(be, dt, 1, 1, {dphi0});
  std::vector<Tensor> dck, dcv;
  for (int x = 0; x < c.n_ctx; ++x) {
    dck.push_back(be.alloc(dt, c.ctx_rows, c.kw()));
    dcv.push_back(be.alloc(dt, c.ctx_rows, c.kw()));
  }
  for (const Tensor* g : {&dq, &dk, &dv}) be.fill(*g, prefill);
  for (int x = 0; x < c.n_ctx; ++x) {
    be.fill(dck[x], prefill);
    be.fill(dcv[x], prefill);
  }
  be.attention_bwd(c.dims, t.q, t.k, t.v, t.ck, t.cv, t.phi, t.index, f.os, f.oc, f.ls, f.lc,
                   upload(be, dt, c.n(), c.qw(), d_o), dq, dk, dv, dck, dcv, dphi);
  AttnGrad g{read(be, dq), read(be, dk), read(be, dv), read(be, dphi), {}, {}};
  for (int x = 0; x < c.n_ctx; ++x) {
    g.dck.push_back(read(be, dck[x]));
    g.dcv.push_back(read(be, dcv[x]));
  }
  return g;
}

// The cases every test runs over.
std::vector<AttnCase> cases() {
  std::vector<AttnCase> cs;
  cs.push_back(make_case("causal", 2, 5, 2, Ctx::PerPosition, {5, 5}, causal_map));
  cs.push_back(make_case("atm", 2, 6, 2, Ctx::PerPosition, {6, 6}, atm_map));
  cs.push_back(make_case("padding", 2, 5, 2, Ctx::PerPosition, {3, 5}, causal_map));
  cs.push_back(make_case("ctx1_per_sequence", 2, 5, 1, Ctx::PerSequence, {5, 4}, causal_map));
  cs.push_back(make_case("ctx2_per_sequence", 2, 6, 2, Ctx::PerSequence, {6, 5}, atm_map));
  cs.push_back(make_case("ctx1_per_position", 2, 5, 1, Ctx::PerPosition, {5, 5}, causal_map));
  // head_dim 12: the kernels' 8-wide dot products plus a tail.
  cs.push_back(make_case("atm_dh12", 1, 6, 2, Ctx::PerPosition, {6}, atm_map));
  cs.back().dims.head_dim = 12;
  return cs;
}

TEST(Attention, ForwardMatchesReference) {
  auto be = make_cpu_backend();
  std::uint64_t seed = 100;
  for (const AttnCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const AttnInputs in = random_inputs(c, seed += 10);
    const AttnOut ref = ref_attention(c, in);
    const AttnOut got = run_fwd(*be, DType::F64, c, in);
    expect_close(got.o, ref.o, 1e-14, "o");
    expect_close(got.os, ref.os, 1e-14, "o_self");
    expect_close(got.oc, ref.oc, 1e-14, "o_ctx");
    expect_close(got.ls, ref.ls, 1e-14, "lse_self");
    expect_close(got.lc, ref.lc, 1e-14, "lse_ctx");
    const AttnOut f32 = run_fwd(*be, DType::F32, c, in);
    expect_close(f32.o, got.o, 2e-6, "fp32 o");
    expect_close(f32.ls, got.ls, 2e-6, "fp32 lse_self");
    expect_close(f32.lc, got.lc, 2e-6, "fp32 lse_ctx");
  }
}

TEST(Attention, PaddingRowsAreZeroAndGetNoGradient) {
  auto be = make_cpu_backend();
  const AttnCase c = make_case("padding", 2, 5, 2, Ctx::PerPosition, {3, 5}, causal_map);
  const AttnInputs in = random_inputs(c, 7);
  const AttnOut out = run_fwd(*be, DType::F64, c, in);
  for (int t = 3; t < 5; ++t)
    for (std::int64_t j = 0; j < c.qw(); ++j) {
      EXPECT_EQ(out.o[t * c.qw() + j], 0.0);
      EXPECT_EQ(out.os[t * c.qw() + j], 0.0);
      EXPECT_EQ(out.oc[t * c.qw() + j], 0.0);
    }
  auto d_o = random_vector(c.n() * c.qw(), 8);
  const AttnGrad g = run_bwd(*be, DType::F64, c, in, d_o);
  for (int t = 3; t < 5; ++t) {
    for (std::int64_t j = 0; j < c.qw(); ++j) EXPECT_EQ(g.dq[t * c.qw() + j], 0.0);
    // Keys 3, 4 of sequence 0 are only visible to its padding rows.
    for (std::int64_t j = 0; j < c.kw(); ++j) {
      EXPECT_EQ(g.dk[t * c.kw() + j], 0.0);
      EXPECT_EQ(g.dv[t * c.kw() + j], 0.0);
      EXPECT_EQ(g.dck[0][t * c.kw() + j], 0.0);
      EXPECT_EQ(g.dcv[1][t * c.kw() + j], 0.0);
    }
  }
  // dO on padding rows is ignored.
  for (int t = 3; t < 5; ++t)
    for (std::int64_t j = 0; j < c.qw(); ++j) d_o[t * c.qw() + j] = 1e3;
  EXPECT_TRUE(bit_identical(run_bwd(*be, DType::F64, c, in, d_o).all(), g.all()));
}

TEST(Attention, GroupMappingIsHeadModKvHeads) {
  auto be = make_cpu_backend();
  const AttnCase c = cases()[0];
  const AttnInputs in = random_inputs(c, 9);
  const AttnOut got = run_fwd(*be, DType::F64, c, in);
  expect_close(got.o, ref_attention(c, in).o, 1e-14, "h % Hkv");
  // With H = 4, Hkv = 2 the mappings differ for heads 1 and 2: a kernel
  // using h / (H/Hkv) would fail the comparison above.
  EXPECT_GT(max_abs_diff(got.o, ref_attention(c, in, true).o), 1e-2);
}

TEST(Attention, ExtraKeyInsidePrefixIsSeenOnce) {
  auto be = make_cpu_backend();
  AttnCase c = cases()[0];
  const AttnInputs in = random_inputs(c, 11);
  const AttnOut plain = run_fwd(*be, DType::F64, c, in);
  for (std::size_t i = 0; i < c.extra.size(); ++i) c.extra[i] = c.prefix[i] - 1;
  EXPECT_TRUE(bit_identical(run_fwd(*be, DType::F64, c, in).o, plain.o));
}

TEST(Attention, BackwardMatchesFiniteDifferences) {
  auto be = make_cpu_backend();
  std::uint64_t seed = 200;
  for (const AttnCase& c : cases()) {
    SCOPED_TRACE(c.name);
    AttnInputs in = random_inputs(c, seed += 10);
    const auto r = random_vector(c.n() * c.qw(), seed + 5);
    auto loss = [&] { return weighted_sum(run_fwd(*be, DType::F64, c, in).o, r); };
    const double dphi0 = 0.25;  // dφ is added to
    AttnGrad g = run_bwd(*be, DType::F64, c, in, r, 0.0, dphi0);
    g.dphi[0] -= dphi0;
    const std::string op = "attention";
    expect_grad(op, c.name + " dq", check_gradient(in.q, loss, g.dq));
    expect_grad(op, c.name + " dk", check_gradient(in.k, loss, g.dk));
    expect_grad(op, c.name + " dv", check_gradient(in.v, loss, g.dv));
    expect_grad(op, c.name + " dphi", check_gradient(in.phi, loss, g.dphi));
    for (int x = 0; x < c.n_ctx; ++x) {
      std::string sx("[");  // (built up piecewise: GCC 12 warns on "[" + string)
      sx += std::to_string(x);
      sx += "]";
      expect_grad(op, c.name + " dctx_v" + sx, check_gradient(in.cv[x], loss, g.dcv[x]));
      if (c.n_ctx == 1) {
        // One summary: its softmax weight is 1 whatever the score, so ctx_k
        // gets exactly zero gradient.
        for (double v : g.dck[x]) EXPECT_EQ(v, 0.0);
        EXPECT_LT(check_gradient(in.ck[x], loss, g.dck[x]).max_abs_error, 1e-9);
      } else {
        expect_grad(op, c.name + " dctx_k" + sx, check_gradient(in.ck[x], loss, g.dck[x]));
      }
    }
  }
}

TEST(Attention, GradientsAreWrittenNotAdded) {
  auto be = make_cpu_backend();
  for (const AttnCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const AttnInputs in = random_inputs(c, 13);
    const auto d_o = random_vector(c.n() * c.qw(), 14);
    const AttnGrad clean = run_bwd(*be, DType::F64, c, in, d_o, 0.0);
    const AttnGrad dirty =
        run_bwd(*be, DType::F64, c, in, d_o, std::numeric_limits<double>::quiet_NaN());
    EXPECT_TRUE(bit_identical(dirty.all(), clean.all()));
  }
}

// SRPE taken by the op (AttentionRotary) is, on the CPU, srpe_fwd of Q in
// place and of K into a tensor of its own before the forward, and srpe_bwd
// of dQ and dK after the backward: the same bits as those ops, in fp32,
// with the keys' positions other than the queries'. K is left as it was.
TEST(Attention, SrpeTakenByTheOpIsTheSeparateOps) {
  auto be = make_cpu_backend();
  const DType dt = DType::F32;
  for (const AttnCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const int T = c.dims.seq, half = c.dims.head_dim / 2;
    std::vector<std::int32_t> pq, pk;
    for (std::int64_t i = 0; i < c.n(); ++i) {
      pq.push_back(static_cast<std::int32_t>(i % T));
      pk.push_back(static_cast<std::int32_t>(T - 1 - i % T));
    }
    const AttentionRotary rotary{upload_index(*be, pq), upload_index(*be, pk),
                                 upload(*be, dt, T, half, random_vector(T * half, 31)),
                                 upload(*be, dt, T, half, random_vector(T * half, 32)),
                                 RotaryPairs::Half};
    const AttnInputs in = random_inputs(c, 33);
    const auto d_o = random_vector(c.n() * c.qw(), 34);
    const int dh = c.dims.head_dim;

    const AttnTensors fused = upload_case(*be, dt, c, in), apart = upload_case(*be, dt, c, in);
    const FwdTensors ff = alloc_fwd(*be, dt, c), fa = alloc_fwd(*be, dt, c);
    be->attention_fwd(c.dims, fused.q, fused.k, fused.v, fused.ck, fused.cv, fused.phi,
                      fused.index, ff.o, ff.os, ff.oc, ff.ls, ff.lc, AttentionGate{}, rotary);
    be->srpe_fwd(apart.q, rotary.pos_q, rotary.cos_tab, rotary.sin_tab, dh, rotary.pairs, apart.q);
    const Tensor kr = be->alloc(dt, c.n(), c.kw());
    be->srpe_fwd(apart.k, rotary.pos_kv, rotary.cos_tab, rotary.sin_tab, dh, rotary.pairs, kr);
    forward(*be, c, AttnTensors{apart.q, kr, apart.v, apart.phi, apart.ck, apart.cv, apart.index},
            fa);
    EXPECT_TRUE(bit_identical(read(*be, fused.q), read(*be, apart.q))) << "q";
    EXPECT_TRUE(bit_identical(read(*be, fused.k), read(*be, apart.k))) << "k was written";
    for (const auto& [x, y] : {std::pair{ff.o, fa.o}, {ff.os, fa.os}, {ff.oc, fa.oc},
                               {ff.ls, fa.ls}, {ff.lc, fa.lc}})
      EXPECT_TRUE(bit_identical(read(*be, x), read(*be, y))) << "forward outputs";

    auto grads = [&](bool rotated, const Tensor& k, const FwdTensors& f, const AttnTensors& t) {
      Tensor dq = be->alloc(dt, c.n(), c.qw()), dk = be->alloc(dt, c.n(), c.kw()),
             dv = be->alloc(dt, c.n(), c.kw()), dphi = be->alloc(dt, 1, 1);
      std::vector<Tensor> dck, dcv;
      for (int x = 0; x < c.n_ctx; ++x) {
        dck.push_back(be->alloc(dt, c.ctx_rows, c.kw()));
        dcv.push_back(be->alloc(dt, c.ctx_rows, c.kw()));
      }
      be->attention_bwd(c.dims, t.q, k, t.v, t.ck, t.cv, t.phi, t.index, f.os, f.oc, f.ls, f.lc,
                        upload(*be, dt, c.n(), c.qw(), d_o), dq, dk, dv, dck, dcv, dphi,
                        AttentionGateGrad{}, rotated ? rotary : AttentionRotary{});
      if (!rotated) {
        be->srpe_bwd(dq, rotary.pos_q, rotary.cos_tab, rotary.sin_tab, dh, rotary.pairs, dq);
        be->srpe_bwd(dk, rotary.pos_kv, rotary.cos_tab, rotary.sin_tab, dh, rotary.pairs, dk);
      }
      std::vector<double> all = read(*be, dq);
      std::vector<const Tensor*> rest{&dk, &dv, &dphi};
      for (int x = 0; x < c.n_ctx; ++x) {
        rest.push_back(&dck[std::size_t(x)]);
        rest.push_back(&dcv[std::size_t(x)]);
      }
      for (const Tensor* g : rest) {
        const std::vector<double> v = read(*be, *g);
        all.insert(all.end(), v.begin(), v.end());
      }
      return all;
    };
    EXPECT_TRUE(bit_identical(grads(true, fused.k, ff, fused), grads(false, kr, fa, apart)))
        << "gradients";
  }
}

TEST(Attention, Fp32BackwardAgreesWithFp64) {
  auto be = make_cpu_backend();
  for (const AttnCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const AttnInputs in = random_inputs(c, 15);
    const auto d_o = random_vector(c.n() * c.qw(), 16);
    expect_close(run_bwd(*be, DType::F32, c, in, d_o).all(), run_bwd(*be, DType::F64, c, in, d_o).all(),
                 1e-5, "fp32 vs fp64 gradients");
  }
}

// q, k, v as column slices of one fused [N, (H + 2 Hkv) dh] projection buffer,
// outputs and gradients as slices of wider buffers: results equal the
// contiguous run bit for bit and nothing outside the views is written.
TEST(Attention, StridedViewsMatchContiguous) {
  auto be = make_cpu_backend();
  const AttnCase c = cases()[1];
  const AttnInputs in = random_inputs(c, 17);
  const auto d_o = random_vector(c.n() * c.qw(), 18);
  const DType dt = DType::F64;
  const AttnOut ref_out = run_fwd(*be, dt, c, in);
  const AttnGrad ref_grad = run_bwd(*be, dt, c, in, d_o);

  const std::int64_t qw = c.qw(), kw = c.kw(), fused = qw + 2 * kw;
  Strided qkv = strided(*be, dt, c.n(), fused, 0, 0);
  Tensor q = qkv.parent.cols_slice(0, qw), k = qkv.parent.cols_slice(qw, qw + kw),
         v = qkv.parent.cols_slice(qw + kw, fused);
  write(*be, q, in.q);
  write(*be, k, in.k);
  write(*be, v, in.v);
  AttnTensors t = upload_case(*be, dt, c, in);
  // Context tensors as slices too.
  std::vector<Strided> sck, scv;
  for (int x = 0; x < c.n_ctx; ++x) {
    sck.push_back(strided(*be, dt, c.ctx_rows, kw, 3, 1));
    scv.push_back(strided(*be, dt, c.ctx_rows, kw, 2, 2));
    write(*be, sck[x].view, in.ck[x]);
    write(*be, scv[x].view, in.cv[x]);
    t.ck[x] = sck[x].view;
    t.cv[x] = scv[x].view;
  }
  Strided o = strided(*be, dt, c.n(), qw, 3, 2), os = strided(*be, dt, c.n(), qw, 1, 1),
          oc = strided(*be, dt, c.n(), qw, 2, 0),
          ls = strided(*be, dt, c.n(), c.dims.heads, 2, 1),
          lc = strided(*be, dt, c.n(), c.dims.heads, 1, 0);
  be->attention_fwd(c.dims, q, k, v, t.ck, t.cv, t.phi, t.index, o.view, os.view, oc.view,
                    ls.view, lc.view);
  EXPECT_EQ(read(*be, o.view), ref_out.o);
  EXPECT_EQ(read(*be, os.view), ref_out.os);
  EXPECT_EQ(read(*be, oc.view), ref_out.oc);
  EXPECT_EQ(read(*be, ls.view), ref_out.ls);
  EXPECT_EQ(read(*be, lc.view), ref_out.lc);
  EXPECT_TRUE(outside_untouched(*be, o, 2));
  EXPECT_TRUE(outside_untouched(*be, ls, 1));

  Strided dqkv = strided(*be, dt, c.n(), fused, 0, 0);
  Tensor dq = dqkv.parent.cols_slice(0, qw), dk = dqkv.parent.cols_slice(qw, qw + kw),
         dv = dqkv.parent.cols_slice(qw + kw, fused);
  Strided ddo = strided(*be, dt, c.n(), qw, 4, 3);
  write(*be, ddo.view, d_o);
  std::vector<Strided> sdck, sdcv;
  std::vector<Tensor> dck, dcv;
  for (int x = 0; x < c.n_ctx; ++x) {
    sdck.push_back(strided(*be, dt, c.ctx_rows, kw, 2, 1));
    sdcv.push_back(strided(*be, dt, c.ctx_rows, kw, 1, 0));
    dck.push_back(sdck[x].view);
    dcv.push_back(sdcv[x].view);
  }
  Tensor dphi = be->alloc(dt, 1, 1);
  be->attention_bwd(c.dims, q, k, v, t.ck, t.cv, t.phi, t.index, os.view, oc.view, ls.view,
                    lc.view, ddo.view, dq, dk, dv, dck, dcv, dphi);
  EXPECT_EQ(read(*be, dq), ref_grad.dq);
  EXPECT_EQ(read(*be, dk), ref_grad.dk);
  EXPECT_EQ(read(*be, dv), ref_grad.dv);
  EXPECT_EQ(read(*be, dphi), ref_grad.dphi);
  for (int x = 0; x < c.n_ctx; ++x) {
    EXPECT_EQ(read(*be, dck[x]), ref_grad.dck[x]);
    EXPECT_EQ(read(*be, dcv[x]), ref_grad.dcv[x]);
    EXPECT_TRUE(outside_untouched(*be, sdck[x], 1));
    EXPECT_TRUE(outside_untouched(*be, sdcv[x], 0));
  }
}

TEST(Attention, DeterministicAcrossThreadCounts) {
  auto be = make_cpu_backend();
  AttnCase c = make_case("big", 3, 33, 2, Ctx::PerSequence, {33, 20, 31}, [](int t) {
    return std::pair<int, int>{t % 3 == 0 ? t + 1 : (t + 1) / 2, t % 3 == 0 ? -1 : 20 + t / 3};
  });
  c.dims.head_dim = 16;
  const AttnInputs in = random_inputs(c, 19);
  const auto d_o = random_vector(c.n() * c.qw(), 20);
  for (DType dt : {DType::F64, DType::F32}) {
    std::vector<double> res[2];
    for (int threads : {1, 2})
      with_threads(threads, [&] {
        const AttnOut o = run_fwd(*be, dt, c, in);
        res[threads - 1] = run_bwd(*be, dt, c, in, d_o).all();
        for (const auto* p : {&o.o, &o.os, &o.oc, &o.ls, &o.lc})
          res[threads - 1].insert(res[threads - 1].end(), p->begin(), p->end());
      });
    EXPECT_TRUE(bit_identical(res[0], res[1]));
  }
}

// No context summaries (n_ctx = 0, Wiola 13M): plain attention, O = O_self
// bit for bit; φ, O_ctx, lse_ctx and dφ are not given (undefined) and o may be
// o_self; the gradients of q, k, v match finite differences.
TEST(Attention, WithoutContextIsPlainAttention) {
  auto be = make_cpu_backend();
  std::uint64_t seed = 300;
  for (AttnCase c : {make_case("causal_no_ctx", 2, 5, 0, Ctx::PerPosition, {5, 5}, causal_map),
                     make_case("padding_no_ctx", 2, 5, 0, Ctx::PerPosition, {3, 5}, causal_map),
                     make_case("atm_map_no_ctx", 2, 6, 0, Ctx::PerPosition, {6, 6}, atm_map)}) {
    SCOPED_TRACE(c.name);
    AttnInputs in = random_inputs(c, seed += 10);
    // The reference's self branch, with the blend left out.
    const AttnOut ref = ref_attention(c, in);
    const DType dt = DType::F64;
    auto forward_o = [&](bool alias) {
      AttnTensors t = upload_case(*be, dt, c, in);
      Tensor o = be->alloc(dt, c.n(), c.qw()), ls = be->alloc(dt, c.n(), c.dims.heads);
      Tensor os = alias ? o : be->alloc(dt, c.n(), c.qw());
      be->attention_fwd(c.dims, t.q, t.k, t.v, {}, {}, Tensor{}, t.index, o, os, Tensor{}, ls,
                        Tensor{});
      EXPECT_TRUE(bit_identical(read(*be, o), read(*be, os)));
      return std::pair{read(*be, o), read(*be, ls)};
    };
    const auto [o, ls] = forward_o(false);
    expect_close(o, ref.os, 1e-14, "o = o_self");
    expect_close(ls, ref.ls, 1e-14, "lse_self");
    EXPECT_TRUE(bit_identical(forward_o(true).first, o));

    const auto r = random_vector(c.n() * c.qw(), seed + 5);
    auto loss = [&] { return weighted_sum(forward_o(false).first, r); };
    AttnTensors t = upload_case(*be, dt, c, in);
    Tensor of = be->alloc(dt, c.n(), c.qw()), lsf = be->alloc(dt, c.n(), c.dims.heads);
    be->attention_fwd(c.dims, t.q, t.k, t.v, {}, {}, Tensor{}, t.index, of, of, Tensor{}, lsf,
                      Tensor{});
    Tensor dq = be->alloc(dt, c.n(), c.qw()), dk = be->alloc(dt, c.n(), c.kw()),
           dv = be->alloc(dt, c.n(), c.kw());
    for (const Tensor* g : {&dq, &dk, &dv}) be->fill(*g, std::nan(""));  // written, not added
    be->attention_bwd(c.dims, t.q, t.k, t.v, {}, {}, Tensor{}, t.index, of, Tensor{}, lsf,
                      Tensor{}, upload(*be, dt, c.n(), c.qw(), r), dq, dk, dv, {}, {}, Tensor{});
    const std::string op = "attention (no context)";
    expect_grad(op, c.name + " dq", check_gradient(in.q, loss, read(*be, dq)));
    expect_grad(op, c.name + " dk", check_gradient(in.k, loss, read(*be, dk)));
    expect_grad(op, c.name + " dv", check_gradient(in.v, loss, read(*be, dv)));
  }
}

// Runs forward on a case expecting an Error whose message contains `what`.
void expect_rejected(const AttnCase& c, const std::string& what) {
  auto be = make_cpu_backend();
  const AttnInputs in = random_inputs(c, 21);
  try {
    run_fwd(*be, DType::F64, c, in);
    ADD_FAILURE() << c.name << ": accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(Attention, RejectsBadIndexMaps) {
  AttnCase c = cases()[0];
  c.prefix[3] = 0;  // no keys at all
  expect_rejected(c, "sees no key");
  c = cases()[0];
  c.prefix[2] = 6;
  expect_rejected(c, "key_prefix");
  c = cases()[0];
  c.extra[4] = 5;
  expect_rejected(c, "key_extra");
  c = cases()[0];
  c.crow[7] = static_cast<std::int32_t>(c.ctx_rows);
  expect_rejected(c, "ctx_row");
  c = cases()[0];
  c.nq[1] = 6;
  expect_rejected(c, "n_queries");
  // Padding rows are never read, so their entries may hold anything.
  c = cases()[2];
  c.prefix[4] = -7;
  c.crow[4] = 1000;
  auto be = make_cpu_backend();
  EXPECT_NO_THROW(run_fwd(*be, DType::F64, c, random_inputs(c, 22)));
}

TEST(Attention, RejectsBadShapes) {
  auto be = make_cpu_backend();
  const AttnCase c = cases()[0];
  const AttnInputs in = random_inputs(c, 23);
  AttnTensors t = upload_case(*be, DType::F64, c, in);
  const FwdTensors f = alloc_fwd(*be, DType::F64, c);
  AttentionDims bad = c.dims;
  bad.kv_heads = 4;  // k would need 16 columns
  EXPECT_THROW(be->attention_fwd(bad, t.q, t.k, t.v, t.ck, t.cv, t.phi, t.index, f.o, f.os, f.oc,
                                 f.ls, f.lc),
               Error);
  std::vector<Tensor> one_v = {t.cv[0]};
  EXPECT_THROW(be->attention_fwd(c.dims, t.q, t.k, t.v, t.ck, one_v, t.phi, t.index, f.o, f.os,
                                 f.oc, f.ls, f.lc),
               Error);
  // Context summaries need φ (without any, φ is not read: the no-context test).
  EXPECT_THROW(be->attention_fwd(c.dims, t.q, t.k, t.v, t.ck, t.cv, Tensor{}, t.index, f.o, f.os,
                                 f.oc, f.ls, f.lc),
               Error);
  EXPECT_THROW(be->attention_fwd(c.dims, t.q, t.k, t.v, t.ck, t.cv, t.phi, t.index, f.o, f.os,
                                 f.oc, be->alloc(DType::F64, c.n(), 2), f.lc),
               Error);
  EXPECT_THROW(be->attention_fwd(c.dims, upload(*be, DType::F32, c.n(), c.qw(), in.q), t.k, t.v,
                                 t.ck, t.cv, t.phi, t.index, f.o, f.os, f.oc, f.ls, f.lc),
               Error);
}

}  // namespace
}  // namespace wiola::test
