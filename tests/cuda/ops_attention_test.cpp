// The GCLA attention core on the CUDA backend (kernels/attention_*.cu) against
// the CPU backend in fp64 (device_compare.hpp), in fp32 and bf16: forward
// outputs (o, o_self, o_ctx, lse_self, lse_ctx) and every gradient (dq, dk,
// dv, dctx_k, dctx_v, dphi) for plain causal GCLA and both ATM plans built by
// the real plan builders (ops/token_plan.hpp), causal and sequence
// summaries, Λ = 1..3, no context at all (Wiola 13M), awkward shapes, strided
// views, and the same bits on every run.
//
// Each backend's backward reads its own forward's saved tensors, as in
// training, so the gradient errors include the forward's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "device_compare.hpp"
#include "ops/token_plan.hpp"

namespace wiola::test {
namespace {

// One attention call: shapes, summaries and the plan that gives the index.
struct Case {
  std::string name;
  int batch = 1, seq = 1, heads = 1, kv_heads = 1, head_dim = 16, n_ctx = 1;
  SummaryMode summary = SummaryMode::Causal;
  TokenPlan plan;
  // > 0: q, k, v, d_o and every output are column slices starting at this
  // column of buffers 24 columns wider than the view (ld > cols). 8 keeps the
  // device's 16-byte rows; 3 does not (the kernels' element-wise path).
  int offset = 0;
  // > 0: key row t of every sequence is scaled by 1 + key_growth·t, so later
  // key tiles raise a row's running max far above the first tile's.
  double key_growth = 0;
  // Padding rows (t >= n_queries) of q, k, v and d_o hold NaN: nothing may read them.
  bool nan_padding = false;
};

// A sequence's merge: pairs (t, t + 1) for every t in `firsts`, through the
// real greedy scan (the firsts must not be adjacent).
SequenceMerge merge_pairs(int seq, const std::vector<int>& firsts) {
  std::vector<double> rho(static_cast<std::size_t>(seq), 0.0);
  for (int t : firsts) rho[static_cast<std::size_t>(t)] = 1.0;
  return greedy_adjacent_merge(rho, 0.5);
}

struct PerQuantity {
  Tolerance o, o_self, o_ctx, lse_self, lse_ctx, dq, dk, dv, dctx_k, dctx_v, dphi;
};

// Tolerances against the fp64 reference, per quantity: |device − ref| <=
// atol + rtol·|ref|. fp32: accumulation order and fp32 rounding only
// (measured worst 2.8e-6 absolute, on lse values up to 28). bf16: both sides
// see the same bf16 inputs; the device rounds P and dS to bf16 for the tensor
// cores and every output to bf16 (2^-9 relative), and its backward reads its
// own forward's bf16 O_self and O_ctx. A gradient is a sum with cancellation,
// so its error follows the tensor's magnitude rather than the element's: for
// the bf16 gradients dq, dk, dv, dctx_k, dctx_v the atol below is a fraction
// of the largest |reference| of the tensor (measured worst: 0.56%).
const PerQuantity kF32{
    {2e-6, 2e-5}, {2e-6, 2e-5}, {2e-6, 2e-5}, {1e-5, 2e-6}, {1e-5, 2e-6}, {2e-5, 1e-4},
    {2e-5, 1e-4}, {2e-5, 1e-4}, {2e-5, 1e-4}, {2e-5, 1e-4}, {1e-5, 1e-4}};
const PerQuantity kBF16{
    {4e-3, 8e-3}, {4e-3, 8e-3}, {4e-3, 8e-3}, {5e-5, 5e-5}, {5e-5, 5e-5}, {1.5e-2, 1e-2},
    {1.5e-2, 1e-2}, {1.5e-2, 1e-2}, {1.5e-2, 1e-2}, {1.5e-2, 1e-2}, {2e-2, 2e-2}};

// Everything one backend's call reads and writes, as views.
struct Side {
  Tensor q, k, v, phi, d_o, o, o_self, o_ctx, lse_self, lse_ctx, dq, dk, dv, dphi;
  std::vector<Tensor> ctx_k, ctx_v, dctx_k, dctx_v;
  AttentionIndex index;
};

class CudaAttention : public DeviceOpTest {
 protected:
  // A Pair of a buffer `offset`-wide + 24 columns wider than the view when
  // offset > 0, and its views.
  struct Slot {
    Pair p;
    Tensor ref, dev;
  };
  Slot slot(Pair p, std::int64_t cols, int offset) {
    Slot s{std::move(p), {}, {}};
    s.ref = offset > 0 ? s.p.ref.cols_slice(offset, offset + cols) : s.p.ref;
    s.dev = offset > 0 ? s.p.dev.cols_slice(offset, offset + cols) : s.p.dev;
    return s;
  }
  Slot in(std::int64_t rows, std::int64_t cols, std::uint64_t seed, double lo, double hi,
          int offset) {
    return slot(input(rows, cols + (offset > 0 ? 24 : 0), seed, lo, hi), cols, offset);
  }
  // An output both backends must overwrite: starts as the same garbage.
  Slot out(DType device_dtype, std::int64_t rows, std::int64_t cols, std::uint64_t seed,
           int offset) {
    Pair p = output_as(device_dtype, rows, cols + (offset > 0 ? 24 : 0));
    same_start(p, random_vector(static_cast<std::size_t>(p.ref.numel()), seed, -5, 5));
    return slot(std::move(p), cols, offset);
  }

  Slot keys(const Case& c, std::int64_t n, std::int64_t kw, std::uint64_t seed) {
    if (c.key_growth == 0) return in(n, kw, seed, -1, 1, c.offset);
    const std::int64_t width = kw + (c.offset > 0 ? 24 : 0);
    std::vector<double> v = random_vector(static_cast<std::size_t>(n * width), seed);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < width; ++j)
        v[static_cast<std::size_t>(i * width + j)] *= 1.0 + c.key_growth * double(i % c.seq);
    return slot(input_as(dtype(), n, width, v), kw, c.offset);
  }

  struct Run {
    AttentionDims dims;
    Pair nq, kp, ke, cr, phi, dphi;
    Slot q, k, v, d_o, o, o_self, o_ctx, lse_self, lse_ctx, dq, dk, dv;
    std::vector<Slot> ctx_k, ctx_v, dctx_k, dctx_v;
    Side ref, dev;
  };

  // Inputs and outputs of case c on both backends.
  Run prepare(const Case& c) {
    const std::int64_t n = std::int64_t(c.batch) * c.seq;
    const std::int64_t qw = std::int64_t(c.heads) * c.head_dim;
    const std::int64_t kw = std::int64_t(c.kv_heads) * c.head_dim;
    const std::int64_t rows = c.summary == SummaryMode::Causal ? n : c.batch;
    const int off = c.offset;
    std::uint64_t seed = 1000;
    Run r{AttentionDims{c.batch, c.seq, c.heads, c.kv_heads, c.head_dim},
          index(c.plan.n_queries), index(c.plan.key_prefix), index(c.plan.key_extra),
          index(c.plan.ctx_row), input(1, 1, 0), output_as(DType::F32, 1, 1),
          // Queries larger than keys: peaked softmaxes, not near-uniform ones.
          in(n, qw, seed++, -2.5, 2.5, off), keys(c, n, kw, seed++),
          in(n, kw, seed++, -1, 1, off), in(n, qw, seed++, -1, 1, off),
          out(dtype(), n, qw, seed++, off), out(dtype(), n, qw, seed++, off),
          out(dtype(), n, qw, seed++, off), out(DType::F32, n, c.heads, seed++, 0),
          out(DType::F32, n, c.heads, seed++, 0), out(dtype(), n, qw, seed++, off),
          out(dtype(), n, kw, seed++, off), out(dtype(), n, kw, seed++, off),
          {}, {}, {}, {}, {}, {}};
    same_start(r.phi, {-0.6});  // β ≈ 0.35
    same_start(r.dphi, {0.25});  // dphi is added to
    for (int i = 0; i < c.n_ctx; ++i) {
      r.ctx_k.push_back(in(rows, kw, seed++, -1.5, 1.5, 0));
      r.ctx_v.push_back(in(rows, kw, seed++, -1, 1, 0));
      r.dctx_k.push_back(out(dtype(), rows, kw, seed++, 0));
      r.dctx_v.push_back(out(dtype(), rows, kw, seed++, 0));
    }
    auto side = [&](bool dev) {
      auto pick = [dev](const Slot& s) { return dev ? s.dev : s.ref; };
      auto pickp = [dev](const Pair& p) { return dev ? p.dev : p.ref; };
      Side s{pick(r.q),      pick(r.k),        pick(r.v),        pickp(r.phi), pick(r.d_o),
             pick(r.o),      pick(r.o_self),   pick(r.o_ctx),    pick(r.lse_self),
             pick(r.lse_ctx), pick(r.dq),      pick(r.dk),       pick(r.dv),   pickp(r.dphi),
             {},             {},               {},               {},
             {pickp(r.nq), pickp(r.kp), pickp(r.ke), pickp(r.cr)}};
      for (int i = 0; i < c.n_ctx; ++i) {
        s.ctx_k.push_back(pick(r.ctx_k[i]));
        s.ctx_v.push_back(pick(r.ctx_v[i]));
        s.dctx_k.push_back(pick(r.dctx_k[i]));
        s.dctx_v.push_back(pick(r.dctx_v[i]));
      }
      return s;
    };
    r.ref = side(false);
    r.dev = side(true);
    if (c.n_ctx == 0)  // no context (Wiola 13M): φ, O_ctx, lse_ctx and dφ are not given
      for (Side* sd : {&r.ref, &r.dev}) sd->phi = sd->o_ctx = sd->lse_ctx = sd->dphi = Tensor{};
    if (c.nan_padding)
      for (Slot* x : {&r.q, &r.k, &r.v, &r.d_o})
        for (int b = 0; b < c.batch; ++b)
          for (int t = c.plan.n_queries[static_cast<std::size_t>(b)]; t < c.seq; ++t) {
            const std::int64_t i = std::int64_t(b) * c.seq + t;
            const std::vector<double> nan(static_cast<std::size_t>(x->ref.cols()),
                                          std::nan(""));
            write(cpu(), x->ref.rows_slice(i, i + 1), nan);
            write(dev(), x->dev.rows_slice(i, i + 1), nan);
          }
    return r;
  }

  static void forward(Backend& be, const AttentionDims& dims, const Side& s) {
    be.attention_fwd(dims, s.q, s.k, s.v, s.ctx_k, s.ctx_v, s.phi, s.index, s.o, s.o_self,
                     s.o_ctx, s.lse_self, s.lse_ctx);
  }
  static void backward(Backend& be, const AttentionDims& dims, const Side& s) {
    be.attention_bwd(dims, s.q, s.k, s.v, s.ctx_k, s.ctx_v, s.phi, s.index, s.o_self, s.o_ctx,
                     s.lse_self, s.lse_ctx, s.d_o, s.dq, s.dk, s.dv, s.dctx_k, s.dctx_v, s.dphi);
  }

  // Every output and gradient buffer of two device runs holds the same bits
  // (whole buffers: nothing beside the views written); `how` ends the message.
  void expect_same_outputs(const Run& x, const Run& y, const char* how) {
    auto same = [&](const char* what, const Tensor& a, const Tensor& b) {
      EXPECT_EQ(read(dev(), a), read(dev(), b)) << what << " differs " << how;
    };
    same("o", x.o.p.dev, y.o.p.dev);
    same("o_self", x.o_self.p.dev, y.o_self.p.dev);
    same("o_ctx", x.o_ctx.p.dev, y.o_ctx.p.dev);
    same("lse_self", x.lse_self.p.dev, y.lse_self.p.dev);
    same("lse_ctx", x.lse_ctx.p.dev, y.lse_ctx.p.dev);
    same("d_o", x.d_o.p.dev, y.d_o.p.dev);
    same("dq", x.dq.p.dev, y.dq.p.dev);
    same("dk", x.dk.p.dev, y.dk.p.dev);
    same("dv", x.dv.p.dev, y.dv.p.dev);
    for (std::size_t i = 0; i < x.dctx_k.size(); ++i) {
      same("dctx_k", x.dctx_k[i].p.dev, y.dctx_k[i].p.dev);
      same("dctx_v", x.dctx_v[i].p.dev, y.dctx_v[i].p.dev);
    }
    same("dphi", x.dphi.dev, y.dphi.dev);
  }

  // Runs case c forward and backward on both backends and compares
  // everything by the tolerances of the test's dtype.
  void check(const Case& c) {
    const auto t0 = std::chrono::steady_clock::now();
    Run r = prepare(c);
    forward(cpu(), r.dims, r.ref);
    forward(dev(), r.dims, r.dev);
    backward(cpu(), r.dims, r.ref);
    backward(dev(), r.dims, r.dev);
    const PerQuantity& t = dtype() == DType::BF16 ? kBF16 : kF32;
    const std::string p = c.name + ": ";
    const bool ctx = c.n_ctx > 0;
    expect_close(p + "o", r.o.p, t.o);
    expect_close(p + "o_self", r.o_self.p, t.o_self);
    if (ctx) expect_close(p + "o_ctx", r.o_ctx.p, t.o_ctx);
    expect_close(p + "lse_self", r.lse_self.p, t.lse_self);
    if (ctx) expect_close(p + "lse_ctx", r.lse_ctx.p, t.lse_ctx);
    // Without context O is O_self, bit for bit.
    if (!ctx) {
      EXPECT_EQ(read(dev(), r.o.dev), read(dev(), r.o_self.dev)) << p << "o != o_self";
    }
    // bf16 gradients: atol relative to the tensor's largest value (in the view).
    auto grad_tol = [&](const Slot& g, Tolerance tol) {
      if (dtype() != DType::BF16) return tol;
      double largest = 0;
      for (double x : read(cpu(), g.ref)) largest = std::max(largest, std::fabs(x));
      return Tolerance{tol.atol * largest, tol.rtol};
    };
    expect_close(p + "dq", r.dq.p, grad_tol(r.dq, t.dq));
    expect_close(p + "dk", r.dk.p, grad_tol(r.dk, t.dk));
    expect_close(p + "dv", r.dv.p, grad_tol(r.dv, t.dv));
    for (int i = 0; i < c.n_ctx; ++i) {
      expect_close(p + "dctx_k[" + std::to_string(i) + "]", r.dctx_k[i].p,
                   grad_tol(r.dctx_k[i], t.dctx_k));
      expect_close(p + "dctx_v[" + std::to_string(i) + "]", r.dctx_v[i].p,
                   grad_tol(r.dctx_v[i], t.dctx_v));
    }
    if (ctx) expect_close(p + "dphi", r.dphi, t.dphi);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[%s %s] %s: %.2f s\n", device_kind(), dtype() == DType::BF16 ? "bf16" : "fp32",
                c.name.c_str(), s);
  }
};

Case plain_case(std::string name, int batch, int seq, int heads, int kv_heads, int head_dim,
                int n_ctx, SummaryMode summary) {
  Case c{std::move(name), batch, seq, heads, kv_heads, head_dim, n_ctx, summary, {}, 0};
  c.plan = plain_plan(batch, seq, summary);
  return c;
}

// ---- every mode ---------------------------------------------------------------------------

WIOLA_DEVICE_OP_TEST(CudaAttention, PlainCausalWithCausalSummaries,
                     Op::attention_fwd, Op::attention_bwd) {
  // T = 70: a full query/key tile and a partial one; GQA with two heads per group.
  check(plain_case("plain, causal summaries, T=70 H=4 Hkv=2 dh=32 Λ=2", 2, 70, 4, 2, 32, 2,
                   SummaryMode::Causal));
}

TEST_P(CudaAttention, PlainCausalWithSequenceSummaries) {
  // 80 queries read each sequence's summary row: the context gradient goes
  // through the chunked partial sums (> 64 readers per row).
  check(plain_case("plain, sequence summaries, T=80 H=2 Hkv=2 dh=16 Λ=1", 2, 80, 2, 2, 16, 1,
                   SummaryMode::Sequence));
}

// Merges with pairs at both ends of the sequences, across the tile boundary
// (63, 64), and dense enough (b = 0) that the causal plan's unmerged extra
// rows span two key tiles.
std::vector<SequenceMerge> atm_merges(int seq) {
  std::vector<int> dense;
  for (int t = 0; t < 60; t += 3) dense.push_back(t);
  dense.push_back(seq - 2);  // the last two tokens
  return {merge_pairs(seq, dense), merge_pairs(seq, {2, 7, 30, 45, 63, seq - 2})};
}

TEST_P(CudaAttention, CausalAtmWithCausalSummaries) {
  const int T = 70;
  Case c{"causal ATM, causal summaries, T=70 H=4 Hkv=1 dh=64 Λ=3", 2, T, 4, 1, 64, 3,
         SummaryMode::Causal, causal_plan(atm_merges(T), T, SummaryMode::Causal), 0};
  ASSERT_GE(*std::max_element(c.plan.key_extra.begin(), c.plan.key_extra.end()), 64)
      << "the extra rows should reach the second key tile";
  check(c);
}

TEST_P(CudaAttention, CausalAtmWithSequenceSummaries) {
  const int T = 70;
  // H = 4·Hkv with two groups: head h reads group h % Hkv, not h / (H / Hkv).
  Case c{"causal ATM, sequence summaries, T=70 H=8 Hkv=2 dh=16 Λ=2", 2, T, 8, 2, 16, 2,
         SummaryMode::Sequence, causal_plan(atm_merges(T), T, SummaryMode::Sequence), 0};
  check(c);
}

TEST_P(CudaAttention, PaperAtmWithBothSummaries) {
  // Paper ATM runs on the T' merged rows: the rest of each block is padding.
  const int T = 70;
  for (SummaryMode summary : {SummaryMode::Causal, SummaryMode::Sequence}) {
    Case c{std::string("paper ATM, ") +
               (summary == SummaryMode::Causal ? "causal" : "sequence") +
               " summaries, T=70 H=2 Hkv=1 dh=32 Λ=2",
           2, T, 2, 1, 32, 2, summary, paper_plan(atm_merges(T), T, summary), 0};
    ASSERT_LT(c.plan.n_queries[0], T);
    check(c);
  }
}

TEST_P(CudaAttention, PaddingRowsAreNeverRead) {
  // Paper ATM leaves rows T'..T-1 of every block unused, as queries and as
  // keys; filled with NaN there, they must not reach any result.
  const int T = 70;
  Case c{"NaN padding, paper ATM, T=70 H=2 Hkv=1 dh=32 Λ=2", 2, T, 2, 1, 32, 2,
         SummaryMode::Causal, paper_plan(atm_merges(T), T, SummaryMode::Causal), 0};
  c.nan_padding = true;
  check(c);
}

WIOLA_DEVICE_OP_TEST(CudaAttention, WithoutContext, Op::attention_fwd, Op::attention_bwd) {
  // Wiola 13M: plain causal attention (no summaries, no φ): T = 70 with a
  // partial tile, GQA with head h reading group h % Hkv, padding rows.
  check(plain_case("no context, T=70 H=4 Hkv=2 dh=32", 2, 70, 4, 2, 32, 0, SummaryMode::Causal));
  Case c = plain_case("no context, padding 70/20, T=70 H=2 Hkv=1 dh=16", 2, 70, 2, 1, 16, 0,
                      SummaryMode::Causal);
  c.plan.n_queries = {70, 20};
  c.nan_padding = true;
  check(c);
}

// ---- awkward shapes ------------------------------------------------------------------------

TEST_P(CudaAttention, OneToken) {
  check(plain_case("one token, T=1 B=3 H=2 Hkv=1 dh=16 Λ=2", 3, 1, 2, 1, 16, 2,
                   SummaryMode::Causal));
}

TEST_P(CudaAttention, PaddingRowsWithDifferentValidCounts) {
  // Three sequences with 70, 33 and 0 valid rows (the rest is padding: zero
  // outputs, zero gradients), sequence summaries.
  Case c = plain_case("padding, n_queries 70/33/0, T=70 H=2 Hkv=2 dh=32 Λ=2", 3, 70, 2, 2, 32, 2,
                      SummaryMode::Sequence);
  c.plan.n_queries = {70, 33, 0};
  check(c);
}

TEST_P(CudaAttention, HeadDims96And128) {
  check(plain_case("dh=96, T=40 H=2 Hkv=1 Λ=2", 1, 40, 2, 1, 96, 2, SummaryMode::Causal));
  check(plain_case("dh=128, T=40 H=2 Hkv=2 Λ=1", 1, 40, 2, 2, 128, 1, SummaryMode::Causal));
}

TEST_P(CudaAttention, StridedViewsAndAnUnpaddedHeadDim) {
  // Column slices whose rows stay 16-byte aligned (offset 8), and ones that
  // do not, with dh = 20 (padded to 32 inside the kernels).
  Case a = plain_case("strided (aligned), T=70 H=2 Hkv=1 dh=32 Λ=2", 1, 70, 2, 1, 32, 2,
                      SummaryMode::Causal);
  a.offset = 8;
  check(a);
  Case b = plain_case("strided (unaligned), dh=20, T=40 H=2 Hkv=2 Λ=1", 2, 40, 2, 2, 20, 1,
                      SummaryMode::Sequence);
  b.offset = 3;
  check(b);
}

TEST_P(CudaAttention, RunningMaxGrowsAcrossKeyTiles) {
  // Key norms grow 10x along T = 150 (three tiles): later tiles raise the
  // running max by more than the bf16 kernel's lazy-rescale threshold, so the
  // accumulator really is rescaled (not only on the first visible tile).
  Case c = plain_case("growing keys, T=150 H=2 Hkv=1 dh=16 Λ=1", 1, 150, 2, 1, 16, 1,
                      SummaryMode::Causal);
  c.key_growth = 9.0 / 149;
  check(c);
}

// ---- determinism and refusals ----------------------------------------------------------------

TEST_P(CudaAttention, TwoRunsGiveTheSameBits) {
  const int T = 70;
  Case c{"determinism", 2, T, 2, 1, 32, 2, SummaryMode::Sequence,
         causal_plan(atm_merges(T), T, SummaryMode::Sequence), 0};
  Run first = prepare(c);
  forward(dev(), first.dims, first.dev);
  backward(dev(), first.dims, first.dev);
  Run second = prepare(c);
  forward(dev(), second.dims, second.dev);
  backward(dev(), second.dims, second.dev);
  expect_same_outputs(first, second, "between two runs");
}

// The output gate taken by the attention op (AttentionGate, AttentionGateGrad)
// gives the bits of the separate sigmoid_mul_fwd after the forward and
// sigmoid_mul_bwd before the backward, on strided views and padding rows
// (a paper plan), and changes nothing else.
TEST_P(CudaAttention, TheGateInTheAttentionPassHasTheElementwiseOpsBits) {
  const int T = 70;
  Case c{"gate", 2, T, 4, 2, 32, 1, SummaryMode::Causal,
         paper_plan(atm_merges(T), T, SummaryMode::Causal), 8};
  const std::int64_t n = std::int64_t(c.batch) * T, qw = std::int64_t(c.heads) * c.head_dim;
  Run fused = prepare(c), apart = prepare(c);
  const Slot glog = in(n, qw, 77, -4, 4, c.offset), dy = in(n, qw, 78, -1, 1, c.offset);
  const Slot y1 = out(dtype(), n, qw, 79, c.offset), y2 = out(dtype(), n, qw, 79, c.offset);
  const Slot dg1 = out(dtype(), n, qw, 80, c.offset), dg2 = out(dtype(), n, qw, 80, c.offset);

  const Side& f = fused.dev;
  dev().attention_fwd(fused.dims, f.q, f.k, f.v, f.ctx_k, f.ctx_v, f.phi, f.index, f.o, f.o_self,
                      f.o_ctx, f.lse_self, f.lse_ctx, AttentionGate{glog.dev, y1.dev});
  dev().attention_bwd(fused.dims, f.q, f.k, f.v, f.ctx_k, f.ctx_v, f.phi, f.index, f.o_self,
                      f.o_ctx, f.lse_self, f.lse_ctx, f.d_o, f.dq, f.dk, f.dv, f.dctx_k,
                      f.dctx_v, f.dphi, AttentionGateGrad{glog.dev, f.o, dy.dev, dg1.dev});
  const Side& a = apart.dev;
  forward(dev(), apart.dims, a);
  dev().sigmoid_mul_fwd(glog.dev, a.o, y2.dev);
  dev().sigmoid_mul_bwd(glog.dev, a.o, dy.dev, dg2.dev, a.d_o);
  backward(dev(), apart.dims, a);

  EXPECT_EQ(read(dev(), y1.p.dev), read(dev(), y2.p.dev)) << "y differs from the separate ops'";
  EXPECT_EQ(read(dev(), dg1.p.dev), read(dev(), dg2.p.dev))
      << "dglog differs from the separate ops'";
  expect_same_outputs(fused, apart, "from the separate ops'");
}

// SRPE taken by the attention op (AttentionRotary) gives the bits of
// srpe_fwd on Q and K before the separate forward and srpe_bwd on dQ and dK
// after the backward: Q is rotated in place, K is left as it was, on strided
// views and padding rows (a paper plan, whose merged rows have positions of
// their own), with rotate-half pairs and the gate (as the layer runs it) and
// with interleaved pairs alone on a causal ATM plan, whose key rows (its
// merged rows) have other positions than its query rows: a kernel that
// rotated K at the queries' positions fails there.
TEST_P(CudaAttention, SrpeInTheAttentionPassHasTheSrpeOpsBits) {
  const int T = 70, dh = 32, npos = T + 1;
  const std::int64_t n = 2 * std::int64_t(T), qw = 4 * dh;
  const SrpeTables tab = srpe_tables(npos, dh);
  const Pair cos_tab = input_as(DType::F32, npos, dh / 2, tab.cos),
             sin_tab = input_as(DType::F32, npos, dh / 2, tab.sin);
  for (const bool gated : {true, false}) {
    SCOPED_TRACE(gated ? "rotate-half pairs and the gate" : "interleaved pairs");
    const RotaryPairs pairs = gated ? RotaryPairs::Half : RotaryPairs::Interleaved;
    const TokenPlan plan = gated ? paper_plan(atm_merges(T), T, SummaryMode::Causal)
                                 : causal_plan(atm_merges(T), T, SummaryMode::Causal);
    Case c{"srpe", 2, T, 4, 2, dh, 1, SummaryMode::Causal, plan, 8};
    const Pair pos_q = index(c.plan.pos_q), pos_kv = index(c.plan.pos_kv);
    const AttentionRotary rotary{pos_q.dev, pos_kv.dev, cos_tab.dev, sin_tab.dev, pairs};
    Run fused = prepare(c), apart = prepare(c);
    const Slot glog = in(n, qw, 77, -4, 4, c.offset), dy = in(n, qw, 78, -1, 1, c.offset);
    const Slot y1 = out(dtype(), n, qw, 79, c.offset), y2 = out(dtype(), n, qw, 79, c.offset);
    const Slot dg1 = out(dtype(), n, qw, 80, c.offset), dg2 = out(dtype(), n, qw, 80, c.offset);
    const AttentionGate gate = gated ? AttentionGate{glog.dev, y1.dev} : AttentionGate{};
    const AttentionGateGrad gate_grad =
        gated ? AttentionGateGrad{glog.dev, fused.o.dev, dy.dev, dg1.dev} : AttentionGateGrad{};
    const std::vector<double> k_before = read(dev(), fused.k.p.dev);

    const Side& f = fused.dev;
    dev().attention_fwd(fused.dims, f.q, f.k, f.v, f.ctx_k, f.ctx_v, f.phi, f.index, f.o,
                        f.o_self, f.o_ctx, f.lse_self, f.lse_ctx, gate, rotary);
    dev().attention_bwd(fused.dims, f.q, f.k, f.v, f.ctx_k, f.ctx_v, f.phi, f.index, f.o_self,
                        f.o_ctx, f.lse_self, f.lse_ctx, f.d_o, f.dq, f.dk, f.dv, f.dctx_k,
                        f.dctx_v, f.dphi, gate_grad, rotary);
    const Side& a = apart.dev;
    dev().srpe_fwd(a.q, pos_q.dev, cos_tab.dev, sin_tab.dev, dh, pairs, a.q);
    dev().srpe_fwd(a.k, pos_kv.dev, cos_tab.dev, sin_tab.dev, dh, pairs, a.k);
    forward(dev(), apart.dims, a);
    if (gated) {
      dev().sigmoid_mul_fwd(glog.dev, a.o, y2.dev);
      dev().sigmoid_mul_bwd(glog.dev, a.o, dy.dev, dg2.dev, a.d_o);
    }
    backward(dev(), apart.dims, a);
    dev().srpe_bwd(a.dq, pos_q.dev, cos_tab.dev, sin_tab.dev, dh, pairs, a.dq);
    dev().srpe_bwd(a.dk, pos_kv.dev, cos_tab.dev, sin_tab.dev, dh, pairs, a.dk);

    // Whole buffers: nothing beside the views written.
    EXPECT_EQ(read(dev(), fused.q.p.dev), read(dev(), apart.q.p.dev))
        << "q, rotated in place, differs from the separate ops'";
    EXPECT_EQ(read(dev(), fused.k.p.dev), k_before) << "k was written";
    if (gated) {
      EXPECT_EQ(read(dev(), y1.p.dev), read(dev(), y2.p.dev)) << "y differs from the separate ops'";
      EXPECT_EQ(read(dev(), dg1.p.dev), read(dev(), dg2.p.dev))
          << "dglog differs from the separate ops'";
    }
    expect_same_outputs(fused, apart, "from the separate ops'");
  }
}

TEST_P(CudaAttention, BadArgumentsAreRefusedByName) {
  Case c = plain_case("refusals", 1, 8, 2, 1, 16, 1, SummaryMode::Causal);
  Run r = prepare(c);
  auto refused = [&](const char* what, const std::string& needle, auto call) {
    try {
      call();
      ADD_FAILURE() << what << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << what << ": " << e.what();
    }
  };
  Side s = r.dev;
  const Tensor lse_wrong = dev().alloc(dtype() == DType::BF16 ? DType::BF16 : DType::F64, 8, 2);
  refused("lse in the compute dtype", "attention_fwd: lse_self is", [&] {
    dev().attention_fwd(r.dims, s.q, s.k, s.v, s.ctx_k, s.ctx_v, s.phi, s.index, s.o, s.o_self,
                        s.o_ctx, lse_wrong, s.lse_ctx);
  });
  refused("dphi in the compute dtype", "attention_bwd: dphi is", [&] {
    const Tensor dphi = dev().alloc(DType::F64, 1, 1);
    dev().attention_bwd(r.dims, s.q, s.k, s.v, s.ctx_k, s.ctx_v, s.phi, s.index, s.o_self,
                        s.o_ctx, s.lse_self, s.lse_ctx, s.d_o, s.dq, s.dk, s.dv, s.dctx_k,
                        s.dctx_v, dphi);
  });
  refused("k of the wrong width", "attention_fwd: k is", [&] {
    dev().attention_fwd(r.dims, s.q, s.q, s.v, s.ctx_k, s.ctx_v, s.phi, s.index, s.o, s.o_self,
                        s.o_ctx, s.lse_self, s.lse_ctx);
  });
  refused("a gate without its output", "attention_fwd: gate.y", [&] {
    dev().attention_fwd(r.dims, s.q, s.k, s.v, s.ctx_k, s.ctx_v, s.phi, s.index, s.o, s.o_self,
                        s.o_ctx, s.lse_self, s.lse_ctx, AttentionGate{s.o, Tensor{}});
  });
  refused("a gate gradient of the wrong width", "attention_bwd: gate.dy is", [&] {
    dev().attention_bwd(r.dims, s.q, s.k, s.v, s.ctx_k, s.ctx_v, s.phi, s.index, s.o_self,
                        s.o_ctx, s.lse_self, s.lse_ctx, s.d_o, s.dq, s.dk, s.dv, s.dctx_k,
                        s.dctx_v, s.dphi, AttentionGateGrad{s.o, s.o, s.dk, s.dq});
  });
  refused("SRPE positions of the wrong length", "attention_fwd: rotary.pos_kv", [&] {
    const Tensor pos = dev().alloc(DType::I32, 8, 1), short_pos = dev().alloc(DType::I32, 7, 1);
    const Tensor tab = dev().alloc(DType::F32, 9, 8);
    dev().attention_fwd(r.dims, s.q, s.k, s.v, s.ctx_k, s.ctx_v, s.phi, s.index, s.o, s.o_self,
                        s.o_ctx, s.lse_self, s.lse_ctx, AttentionGate{},
                        AttentionRotary{pos, short_pos, tab, tab, RotaryPairs::Half});
  });
  refused("SRPE tables of the wrong width", "attention_bwd: rotary.sin_tab is", [&] {
    const Tensor pos = dev().alloc(DType::I32, 8, 1);
    const Tensor cos_tab = dev().alloc(DType::F32, 9, 8), sin_tab = dev().alloc(DType::F32, 9, 16);
    dev().attention_bwd(r.dims, s.q, s.k, s.v, s.ctx_k, s.ctx_v, s.phi, s.index, s.o_self,
                        s.o_ctx, s.lse_self, s.lse_ctx, s.d_o, s.dq, s.dk, s.dv, s.dctx_k,
                        s.dctx_v, s.dphi, AttentionGateGrad{},
                        AttentionRotary{pos, pos, cos_tab, sin_tab, RotaryPairs::Half});
  });
  refused("nine summaries", "at most 8", [&] {
    std::vector<Tensor> nine(9, s.ctx_k[0]);
    dev().attention_fwd(r.dims, s.q, s.k, s.v, nine, nine, s.phi, s.index, s.o, s.o_self,
                        s.o_ctx, s.lse_self, s.lse_ctx);
  });
  refused("head_dim 160", "head_dim 160", [&] {
    // Arguments of the right shapes (no context): the kernels' limit refuses it.
    const AttentionDims wide{1, 8, 1, 1, 160};
    const Tensor x = dev().alloc(dtype(), 8, 160), lse = dev().alloc(DType::F32, 8, 1);
    dev().attention_fwd(wide, x, x, x, {}, {}, Tensor{}, s.index, x, x, Tensor{}, lse, Tensor{});
  });
}

WIOLA_DEVICE_OP_SUITE(CudaAttention);

}  // namespace
}  // namespace wiola::test
