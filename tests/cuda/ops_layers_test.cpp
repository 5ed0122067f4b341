// The CUDA backend's layer ops (embedding, WRMSNorm, SRPE, summaries, ATM row
// maps, cross-entropy, the head's loss), forward and backward, against the CPU backend in fp64
// (device_compare.hpp), in fp32 and bf16. Statistics and parameter gradients
// are fp32 on the device whatever the compute dtype, so their tolerances are
// the fp32 ones in both modes; compute-dtype outputs in bf16 allow the final
// rounding (at most 2^-8 = 3.9e-3 relative, so rtol 4e-3; 8e-3 where a value
// is rounded twice) plus a small atol for fp32 cancellation near zero. Their
// measured worst errors therefore sit just under the rtol by construction.
//
// Shapes are small (the emulation runs every thread as a fiber) but chosen to
// reach every path: strided views, more items than one staged key chunk of
// the scatter kernel, two column tiles, more rows than one norm row chunk,
// sequences shorter and longer than the summary's slice count, a vocabulary
// that is not a multiple of the block size.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "device_compare.hpp"

namespace wiola::test {
namespace {

class CudaEmbeddingOps : public DeviceOpTest {};
class CudaNormOps : public DeviceOpTest {};
class CudaSrpeOps : public DeviceOpTest {};
class CudaSummaryOps : public DeviceOpTest {};
class CudaRowMapOps : public DeviceOpTest {};
class CudaLossOps : public DeviceOpTest {};
class CudaLayerOpChecks : public DeviceOpTest {};

// ---- embedding --------------------------------------------------------------------------

WIOLA_DEVICE_OP_TEST(CudaEmbeddingOps, GatherCopiesRowsOnStridedViews, Op::embedding_fwd) {
  const int vocab = 37, d = 45, n = 50;
  std::vector<std::int32_t> tok(n);
  for (int i = 0; i < n; ++i) tok[i] = i % 3 == 0 ? 5 : (i * 7) % vocab;
  Pair t = index(tok);
  Pair table_w = input(vocab, d + 9, 21), out_w = output(n, d + 3);
  const Pair table = cols(table_w, 4, 4 + d), out = cols(out_w, 2, 2 + d);
  cpu().embedding_fwd(t.ref, table.ref, out.ref);
  dev().embedding_fwd(t.dev, table.dev, out.dev);
  expect_close("embedding_fwd", out_w, {0, 0});
}

WIOLA_DEVICE_OP_TEST(CudaEmbeddingOps, ScatterAddsRepeatedTokensInFp32Deterministically,
                     Op::embedding_bwd) {
  // 1100 tokens: two staged key chunks; d = 300: two column tiles, the second
  // partial; V = 37: more rows than partitions (32), so partitions hold two ids.
  const int vocab = 37, d = 300, n = 1100;
  std::vector<std::int32_t> tok(n);
  const std::vector<double> r = random_vector(n, 22, 0, vocab);
  for (int i = 0; i < n; ++i) tok[i] = i % 10 == 3 ? 3 : static_cast<std::int32_t>(r[i]);
  for (int i = 500; i < 520; ++i) tok[i] = 7;  // a run of one id, summed in registers
  Pair t = index(tok);
  Pair dout_w = input(n, d + 5, 23);
  const Pair dout = cols(dout_w, 5, 5 + d);
  const std::vector<double> start = random_vector(std::size_t(vocab) * d, 24);
  Pair dtable = output_as(DType::F32, vocab, d), again = output_as(DType::F32, vocab, d);
  same_start(dtable, start);
  same_start(again, start);
  cpu().embedding_bwd(t.ref, dout.ref, dtable.ref);
  dev().embedding_bwd(t.dev, dout.dev, dtable.dev);
  // dtable is fp32 in both modes: fp32 sums of up to ~140 rows (token 3).
  expect_close("embedding_bwd (fp32 dtable, added to)", dtable, {5e-6, 5e-6});
  dev().embedding_bwd(t.dev, dout.dev, again.dev);
  expect_same_bits(dev(), dtable.dev, again.dev, "embedding_bwd, two runs,");
}

// ---- WRMSNorm ---------------------------------------------------------------------------

WIOLA_DEVICE_OP_TEST(CudaNormOps, ForwardAndBackwardOnStridedViews,
                     Op::wrmsnorm_fwd, Op::wrmsnorm_bwd) {
  const int n = 70;  // three row chunks of the backward pass
  const double eps = 1e-6;
  for (int d : {45, 300}) {
    SCOPED_TRACE("d = " + std::to_string(d));
    const std::string at = " (d " + std::to_string(d) + ")";
    const std::uint64_t seed = 100 + d;
    Pair x_w = input(n, d + 7, seed, -2, 2);
    const Pair x = cols(x_w, 3, 3 + d);
    Pair gamma = input(1, d, seed + 1, 0.5, 1.5), delta = input(1, d, seed + 2, -0.3, 0.3);
    Pair y_w = output(n, d + 4), rstd = output_as(DType::F32, n, 1);
    const Pair y = cols(y_w, 1, 1 + d);
    cpu().wrmsnorm_fwd(x.ref, gamma.ref, delta.ref, eps, y.ref, rstd.ref);
    dev().wrmsnorm_fwd(x.dev, gamma.dev, delta.dev, eps, y.dev, rstd.dev);
    expect_close("wrmsnorm_fwd y" + at, y_w, tol({1e-6, 1e-6}, {1e-5, 4e-3}));
    expect_close("wrmsnorm_fwd rstd (fp32)" + at, rstd, {0, 1e-6});

    Pair dy_w = input(n, d + 2, seed + 3);
    const Pair dy = cols(dy_w, 2, 2 + d);
    const std::vector<double> g0 = random_vector(d, seed + 4), d0 = random_vector(d, seed + 5);
    Pair dgamma = output_as(DType::F32, 1, d), ddelta = output_as(DType::F32, 1, d);
    same_start(dgamma, g0);
    same_start(ddelta, d0);
    // accumulate = false into a strided dx, then accumulate = true onto random values.
    Pair dx_w = output(n, d + 5);
    same_start(dx_w, random_vector(std::size_t(n) * (d + 5), seed + 6));
    const Pair dx = cols(dx_w, 5, 5 + d);
    cpu().wrmsnorm_bwd(x.ref, gamma.ref, delta.ref, rstd.ref, dy.ref, dx.ref, false, dgamma.ref,
                       ddelta.ref);
    dev().wrmsnorm_bwd(x.dev, gamma.dev, delta.dev, rstd.dev, dy.dev, dx.dev, false, dgamma.dev,
                       ddelta.dev);
    const Tolerance tdx = tol({1e-6, 1e-5}, {1e-5, 4e-3});
    expect_close("wrmsnorm_bwd dx" + at, dx_w, tdx);
    Pair dx2 = output(n, d);
    same_start(dx2, random_vector(std::size_t(n) * d, seed + 7));
    cpu().wrmsnorm_bwd(x.ref, gamma.ref, delta.ref, rstd.ref, dy.ref, dx2.ref, true, dgamma.ref,
                       ddelta.ref);
    dev().wrmsnorm_bwd(x.dev, gamma.dev, delta.dev, rstd.dev, dy.dev, dx2.dev, true, dgamma.dev,
                       ddelta.dev);
    expect_close("wrmsnorm_bwd dx (accumulate)" + at, dx2, tol({1e-6, 1e-5}, {1e-5, 8e-3}));
    // fp32 parameter gradients, added to twice over 70 rows.
    expect_close("wrmsnorm_bwd dgamma (fp32)" + at, dgamma, {1e-5, 1e-5});
    expect_close("wrmsnorm_bwd ddelta (fp32)" + at, ddelta, {1e-5, 1e-5});

    // The column sums are the same bits every run.
    Pair dg_a = output_as(DType::F32, 1, d), dg_b = output_as(DType::F32, 1, d);
    Pair dd_a = output_as(DType::F32, 1, d), dd_b = output_as(DType::F32, 1, d);
    for (Pair* p : {&dg_a, &dg_b}) same_start(*p, g0);
    for (Pair* p : {&dd_a, &dd_b}) same_start(*p, d0);
    dev().wrmsnorm_bwd(x.dev, gamma.dev, delta.dev, rstd.dev, dy.dev, dx2.dev, false, dg_a.dev,
                       dd_a.dev);
    dev().wrmsnorm_bwd(x.dev, gamma.dev, delta.dev, rstd.dev, dy.dev, dx2.dev, false, dg_b.dev,
                       dd_b.dev);
    expect_same_bits(dev(), dg_a.dev, dg_b.dev, "wrmsnorm_bwd dgamma, two runs," + at);
    expect_same_bits(dev(), dd_a.dev, dd_b.dev, "wrmsnorm_bwd ddelta, two runs," + at);
  }
}

// The residual sum and its norm in one kernel: against the CPU, and the same
// bits as the device's add followed by its wrmsnorm_fwd (the sum is rounded to
// the dtype before the norm reads it).
WIOLA_DEVICE_OP_TEST(CudaNormOps, ResidualSumAndNormInOnePass, Op::add_wrmsnorm_fwd) {
  const int n = 70;
  const double eps = 1e-6;
  for (int d : {45, 300}) {
    SCOPED_TRACE("d = " + std::to_string(d));
    const std::string at = " (d " + std::to_string(d) + ")";
    const std::uint64_t seed = 300 + d;
    Pair x_w = input(n, d + 7, seed, -2, 2), r_w = input(n, d + 3, seed + 1, -2, 2);
    const Pair x = cols(x_w, 3, 3 + d), r = cols(r_w, 1, 1 + d);
    Pair gamma = input(1, d, seed + 2, 0.5, 1.5), delta = input(1, d, seed + 3, -0.3, 0.3);
    Pair sum_w = output(n, d + 2), y_w = output(n, d + 4), rstd = output_as(DType::F32, n, 1);
    const Pair sum = cols(sum_w, 2, 2 + d), y = cols(y_w, 1, 1 + d);
    cpu().add_wrmsnorm_fwd(x.ref, r.ref, gamma.ref, delta.ref, eps, sum.ref, y.ref, rstd.ref);
    dev().add_wrmsnorm_fwd(x.dev, r.dev, gamma.dev, delta.dev, eps, sum.dev, y.dev, rstd.dev);
    expect_close("add_wrmsnorm_fwd sum" + at, sum_w, tol({1e-6, 1e-6}, {1e-5, 4e-3}));
    // The norm is compared with the CPU's norm of the sum the device wrote (in
    // bf16 that sum is rounded, and x + δ may cancel what the rounding left),
    // at wrmsnorm_fwd's own bounds.
    Pair summed = input_as(dtype(), n, d, read(dev(), sum.dev));
    Pair y_of_sum = output(n, d), rstd_of_sum = output_as(DType::F32, n, 1);
    cpu().wrmsnorm_fwd(summed.ref, gamma.ref, delta.ref, eps, y_of_sum.ref, rstd_of_sum.ref);
    dev().copy(y.dev, y_of_sum.dev);
    dev().copy(rstd.dev, rstd_of_sum.dev);
    expect_close("add_wrmsnorm_fwd y" + at, y_of_sum, tol({1e-6, 1e-6}, {1e-5, 4e-3}));
    expect_close("add_wrmsnorm_fwd rstd (fp32)" + at, rstd_of_sum, {0, 1e-6});

    const Tensor sum2 = dev().alloc(dtype(), n, d), y2 = dev().alloc(dtype(), n, d);
    const Tensor rstd2 = dev().alloc(DType::F32, n, 1);
    dev().add(x.dev, r.dev, sum2);
    dev().wrmsnorm_fwd(sum2, gamma.dev, delta.dev, eps, y2, rstd2);
    expect_same_bits(dev(), sum.dev, sum2, "add_wrmsnorm_fwd sum against add" + at);
    expect_same_bits(dev(), y.dev, y2, "add_wrmsnorm_fwd y against add, wrmsnorm_fwd" + at);
    expect_same_bits(dev(), rstd.dev, rstd2, "add_wrmsnorm_fwd rstd against add, wrmsnorm_fwd" + at);
  }
}

TEST_P(CudaNormOps, WithoutDeltaIsPlainRmsNorm) {
  // Wiola 13M's RMSNorm: δ and ddelta undefined.
  const int n = 70, d = 45;
  const double eps = 1e-6;
  Pair x_w = input(n, d + 3, 140, -2, 2);
  const Pair x = cols(x_w, 3, 3 + d);
  Pair gamma = input(1, d, 141, 0.5, 1.5);
  Pair y = output(n, d), rstd = output_as(DType::F32, n, 1);
  cpu().wrmsnorm_fwd(x.ref, gamma.ref, Tensor{}, eps, y.ref, rstd.ref);
  dev().wrmsnorm_fwd(x.dev, gamma.dev, Tensor{}, eps, y.dev, rstd.dev);
  expect_close("rmsnorm_fwd y", y, tol({1e-6, 1e-6}, {1e-5, 4e-3}));
  expect_close("rmsnorm_fwd rstd (fp32)", rstd, {0, 1e-6});
  Pair dy = input(n, d, 142);
  Pair dgamma = output_as(DType::F32, 1, d);
  same_start(dgamma, random_vector(d, 143));
  Pair dx = output(n, d);
  same_start(dx, random_vector(std::size_t(n) * d, 144));
  cpu().wrmsnorm_bwd(x.ref, gamma.ref, Tensor{}, rstd.ref, dy.ref, dx.ref, true, dgamma.ref,
                     Tensor{});
  dev().wrmsnorm_bwd(x.dev, gamma.dev, Tensor{}, rstd.dev, dy.dev, dx.dev, true, dgamma.dev,
                     Tensor{});
  expect_close("rmsnorm_bwd dx (accumulate)", dx, tol({1e-6, 1e-5}, {1e-5, 8e-3}));
  expect_close("rmsnorm_bwd dgamma (fp32)", dgamma, {1e-5, 1e-5});
}

// ---- SRPE -------------------------------------------------------------------------------

WIOLA_DEVICE_OP_TEST(CudaSrpeOps, RotationForwardBackwardAndInPlace, Op::srpe_fwd, Op::srpe_bwd) {
  const int n = 9, heads = 3, dh = 8, half = dh / 2, width = heads * dh, npos = 16;
  const SrpeTables tab = srpe_tables(npos, dh);  // fp32 on the device
  Pair cos_tab = input_as(DType::F32, npos, half, tab.cos),
       sin_tab = input_as(DType::F32, npos, half, tab.sin);
  Pair pos = index({3, 0, 15, 7, 7, 1, 12, 9, 4});
  const Tolerance t = tol({1e-6, 1e-6}, {1e-5, 4e-3});

  // Both pairings: rotate-half (SRPE) and interleaved (Wiola 13M's spiral RoPE).
  for (RotaryPairs pairs : {RotaryPairs::Half, RotaryPairs::Interleaved}) {
    const std::string at = pairs == RotaryPairs::Half ? " (rotate-half)" : " (interleaved)";
    const std::uint64_t seed = pairs == RotaryPairs::Half ? 31 : 41;
    Pair x_w = input(n, width + 6, seed, -2, 2), y = output(n, width);
    const Pair x = cols(x_w, 6, 6 + width);
    cpu().srpe_fwd(x.ref, pos.ref, cos_tab.ref, sin_tab.ref, dh, pairs, y.ref);
    dev().srpe_fwd(x.dev, pos.dev, cos_tab.dev, sin_tab.dev, dh, pairs, y.dev);
    expect_close("srpe_fwd" + at, y, t);

    Pair dy_w = input(n, width + 2, seed + 1), dx_w = output(n, width + 3);
    const Pair dy = cols(dy_w, 0, width), dx = cols(dx_w, 3, 3 + width);
    cpu().srpe_bwd(dy.ref, pos.ref, cos_tab.ref, sin_tab.ref, dh, pairs, dx.ref);
    dev().srpe_bwd(dy.dev, pos.dev, cos_tab.dev, sin_tab.dev, dh, pairs, dx.dev);
    expect_close("srpe_bwd" + at, dx_w, t);

    // In place: y = x and dx = dy, on the strided views.
    cpu().srpe_fwd(x.ref, pos.ref, cos_tab.ref, sin_tab.ref, dh, pairs, x.ref);
    dev().srpe_fwd(x.dev, pos.dev, cos_tab.dev, sin_tab.dev, dh, pairs, x.dev);
    expect_close("srpe_fwd in place" + at, x_w, t);
    cpu().srpe_bwd(dy.ref, pos.ref, cos_tab.ref, sin_tab.ref, dh, pairs, dy.ref);
    dev().srpe_bwd(dy.dev, pos.dev, cos_tab.dev, sin_tab.dev, dh, pairs, dy.dev);
    expect_close("srpe_bwd in place" + at, dy_w, t);
  }
}

// ---- summaries --------------------------------------------------------------------------

WIOLA_DEVICE_OP_TEST(CudaSummaryOps, CausalAndSequenceForwardAndBackward,
                     Op::summary_fwd, Op::summary_bwd) {
  const int d = 45;  // two column tiles of 32
  // seq 37 splits into slices of 3 rows; seq 5 leaves most slices empty.
  for (auto [batch, seq] : {std::pair{3, 37}, std::pair{2, 5}}) {
    for (SummaryMode mode : {SummaryMode::Causal, SummaryMode::Sequence}) {
      const std::string at = std::string(" (") + std::string(summary_mode_name(mode)) + ", B " +
                             std::to_string(batch) + ", T " + std::to_string(seq) + ")";
      const std::int64_t n = std::int64_t(batch) * seq;
      const std::int64_t rows = mode == SummaryMode::Causal ? n : batch;
      const std::uint64_t seed = 200 + 10 * seq + (mode == SummaryMode::Causal ? 0 : 1);
      Pair x_w = input(n, d + 3, seed), s = output(rows, d);
      const Pair x = cols(x_w, 3, 3 + d);
      cpu().summary_fwd(mode, x.ref, batch, seq, s.ref);
      dev().summary_fwd(mode, x.dev, batch, seq, s.dev);
      expect_close("summary_fwd" + at, s, tol({1e-6, 1e-5}, {1e-5, 4e-3}));

      // summary_bwd adds into dx (a strided view over random values).
      Pair ds_w = input(rows, d + 2, seed + 1), dx_w = output(n, d + 4);
      same_start(dx_w, random_vector(std::size_t(n) * (d + 4), seed + 2));
      const Pair ds = cols(ds_w, 2, 2 + d), dx = cols(dx_w, 1, 1 + d);
      cpu().summary_bwd(mode, ds.ref, batch, seq, dx.ref);
      dev().summary_bwd(mode, ds.dev, batch, seq, dx.dev);
      expect_close("summary_bwd (added to dx)" + at, dx_w, tol({1e-6, 1e-5}, {1e-5, 4e-3}));
    }
  }
}

// ---- ATM row maps -----------------------------------------------------------------------

WIOLA_DEVICE_OP_TEST(CudaRowMapOps, CosineOfNextRowWithZeroAndParallelRows, Op::row_cosine_next) {
  const int batch = 3, seq = 7, d = 45, n = batch * seq;
  std::vector<double> v = random_vector(std::size_t(n) * (d + 5), 41);
  const int w = d + 5;
  for (int c = 0; c < w; ++c) {
    v[2 * w + c] = 0.0;                   // row 2 is zero: rho[1] = rho[2] = 0
    v[10 * w + c] = 1.5 * v[9 * w + c];   // rows 9, 10 parallel: rho[9] = 1
  }
  Pair x_w = input_as(dtype(), n, w, v);
  const Pair x = cols(x_w, 5, 5 + d);
  Pair rho = output_as(DType::F32, n, 1);
  cpu().row_cosine_next(x.ref, batch, seq, rho.ref);
  dev().row_cosine_next(x.dev, batch, seq, rho.dev);
  // fp32 sums of the same inputs in both modes.
  expect_close("row_cosine_next (fp32 rho)", rho, {1e-6, 1e-6});
  const std::vector<double> got = read(dev(), rho.dev);
  EXPECT_EQ(got[1], 0.0);
  EXPECT_EQ(got[2], 0.0);
  EXPECT_EQ(got[6], -2.0);
  EXPECT_EQ(got[20], -2.0);
}

// The device builds the same plan as the host reference (ops/token_plan.hpp)
// from the same rho: every map, both ATM modes and both summary kinds. rho
// holds multiples of 1/64 (exact in fp32 and fp64, so both backends compare
// the same numbers with tau), some equal to tau (no merge: the test is
// strict). Sequences of 600 tokens give every one of the kernel's 256
// threads a segment of 3, so runs of merging tokens cross segments with
// either parity; one sequence merges everywhere, one nowhere; 5 tokens leave
// most threads without a segment, and one token is a sequence of its own.
WIOLA_DEVICE_OP_TEST(CudaRowMapOps, AtmPlanOnTheDeviceIsTheHostPlan, Op::atm_plan) {
  const double tau = 0.5;
  const auto rho_of = [&](int batch, int seq, std::uint64_t seed) {
    std::vector<double> r = random_vector(std::size_t(batch) * seq, seed);
    for (int b = 0; b < batch; ++b)
      for (int t = 0; t < seq; ++t) {
        double& v = r[std::size_t(b) * seq + t];
        v = std::round(v * 64) / 64;             // in [-1, 1]
        if (b % 4 == 1) v = 0.75;                // merges wherever it can
        if (b % 4 == 2) v = t % 7 == 0 ? tau : -0.25;  // never merges
        if (b % 4 == 3 && t % 9 < 6) v = 1.0;    // runs of 6 (even) and ...
        if (b % 4 == 3 && t % 23 == 0) v = tau;  // ... broken at odd offsets
        if (t == seq - 1) v = -2.0;
      }
    return r;
  };
  for (const int seq : {600, 5, 1})
    for (const AtmMode mode : {AtmMode::Causal, AtmMode::Paper})
      for (const SummaryMode summary : {SummaryMode::Causal, SummaryMode::Sequence}) {
        const int batch = seq == 600 ? 4 : 2;
        const std::int64_t n = std::int64_t(batch) * seq;
        const Pair rho = input_as(DType::F32, n, 1, rho_of(batch, seq, 90 + seq));
        const auto maps = [&] { return index(std::vector<std::int32_t>(std::size_t(n), -7)); };
        const auto per_sequence = [&] {
          return index(std::vector<std::int32_t>(std::size_t(batch), -7));
        };
        std::vector<Pair> p{per_sequence(), maps(), maps(), maps(), maps(), maps(),
                            maps(), maps(),         maps(), per_sequence()};
        const auto plan = [&](bool on_device) {
          const auto t = [&](int i) { return on_device ? p[i].dev : p[i].ref; };
          TokenPlanTensors m;
          m.index = {t(0), t(1), t(2), t(3)};
          m.pos_q = t(4);
          m.pos_kv = t(5);
          m.merge_a = t(6);
          m.merge_b = t(7);
          m.unmerge = t(8);
          m.groups = t(9);
          return m;
        };
        cpu().atm_plan(rho.ref, batch, seq, tau, mode, summary, plan(false));
        dev().atm_plan(rho.dev, batch, seq, tau, mode, summary, plan(true));
        const char* names[] = {"n_queries", "key_prefix", "key_extra", "ctx_row", "pos_q",
                               "pos_kv",    "merge_a",    "merge_b",   "unmerge", "groups"};
        for (std::size_t i = 0; i < p.size(); ++i)
          EXPECT_EQ(read(cpu(), p[i].ref), read(dev(), p[i].dev))
              << names[i] << ", seq " << seq << (mode == AtmMode::Paper ? ", paper" : ", causal")
              << (summary == SummaryMode::Causal ? " plan, causal" : " plan, sequence")
              << " summaries";
        if (seq == 600) {  // the cases above are really there
          const std::vector<double> groups = read(dev(), p[9].dev);
          EXPECT_GT(groups[0], seq / 2);
          EXPECT_LT(groups[0], seq);
          EXPECT_EQ(groups[1], seq / 2);
          EXPECT_EQ(groups[2], seq);
        }
      }
}

// The merge's adjoint written whole for causal plans the host builds (as
// the test above): sequences that merge somewhere, everywhere and nowhere,
// of 600, 5 and 1 tokens, into a strided dsrc whose old values must all be
// overwritten; against the CPU (zeros, then merge_rows_bwd) and the same
// bits on a second run.
WIOLA_DEVICE_OP_TEST(CudaRowMapOps, CausalMergeAdjointWrittenWhole, Op::causal_merge_bwd) {
  const int d = 37;
  for (const int seq : {600, 5, 1}) {
    SCOPED_TRACE(seq);
    const int batch = seq == 600 ? 3 : 2;
    const std::int64_t n = std::int64_t(batch) * seq;
    std::vector<double> r = random_vector(std::size_t(n), 60 + seq);
    for (int t = 0; t < seq; ++t) {
      r[std::size_t(t)] = std::round(r[std::size_t(t)] * 64) / 64;  // merges somewhere
      if (batch > 1) r[std::size_t(seq + t)] = 0.75;                   // everywhere
      if (batch > 2) r[std::size_t(2 * seq + t)] = -0.25;              // nowhere
    }
    for (int b = 0; b < batch; ++b) r[std::size_t(b) * seq + seq - 1] = -2.0;
    const Pair rho = input_as(DType::F32, n, 1, r);
    const auto maps = [&] { return index(std::vector<std::int32_t>(std::size_t(n), -7)); };
    std::vector<Pair> p;
    for (int i = 0; i < 8; ++i) p.push_back(maps());
    Pair groups = index(std::vector<std::int32_t>(std::size_t(batch), -7));
    Pair n_queries = index(std::vector<std::int32_t>(std::size_t(batch), -7));
    TokenPlanTensors plan;
    plan.index = {n_queries.ref, p[0].ref, p[1].ref, p[2].ref};
    plan.pos_q = p[3].ref;
    plan.pos_kv = p[4].ref;
    plan.merge_a = p[5].ref;
    plan.merge_b = p[6].ref;
    plan.unmerge = p[7].ref;
    plan.groups = groups.ref;
    cpu().atm_plan(rho.ref, batch, seq, 0.5, AtmMode::Causal, SummaryMode::Causal, plan);
    const std::vector<double> a = read(cpu(), p[5].ref), b = read(cpu(), p[6].ref);
    const std::vector<double> g = read(cpu(), groups.ref);
    const auto to_index = [](const std::vector<double>& v) {
      return std::vector<std::int32_t>(v.begin(), v.end());
    };
    Pair ia = index(to_index(a)), ib = index(to_index(b)), tg = index(to_index(g));
    if (seq == 600) {  // the three kinds of sequence are there
      EXPECT_GT(g[0], seq / 2);
      EXPECT_LT(g[0], seq);
      EXPECT_EQ(g[1], seq / 2);
      EXPECT_EQ(g[2], seq);
    }
    Pair ddst = input(n, d, 61), dsrc_w = output(n, d + 4), again_w = output(n, d + 4);
    const std::vector<double> start = random_vector(std::size_t(n) * (d + 4), 62);
    same_start(dsrc_w, start);
    same_start(again_w, start);
    const Pair dsrc = cols(dsrc_w, 3, 3 + d), again = cols(again_w, 3, 3 + d);
    cpu().causal_merge_bwd(ddst.ref, ia.ref, ib.ref, tg.ref, batch, seq, dsrc.ref);
    dev().causal_merge_bwd(ddst.dev, ia.dev, ib.dev, tg.dev, batch, seq, dsrc.dev);
    expect_close("causal_merge_bwd", dsrc_w, tol({1e-6, 1e-6}, {1e-5, 8e-3}));
    dev().causal_merge_bwd(ddst.dev, ia.dev, ib.dev, tg.dev, batch, seq, again.dev);
    expect_same_bits(dev(), dsrc_w.dev, again_w.dev, "causal_merge_bwd, two runs,");
  }
}

WIOLA_DEVICE_OP_TEST(CudaRowMapOps, MergeRowsWithASourceRowUsedSeveralTimes,
                     Op::merge_rows_fwd, Op::merge_rows_bwd) {
  const int src_rows = 20, d = 45;
  // Row 5 feeds rows 2 (pair), 3 (alone) and 11 (pair); row 3 fills both slots
  // of row 7 and is alone in row 8; row 4 is empty; rows 12..19 feed nothing.
  Pair ia = index({0, 2, 5, 5, -1, 7, 19, 3, 3, 10, 11, 5});
  Pair ib = index({1, -1, 6, -1, -1, 8, -1, 3, -1, 12, -1, 4});
  const int rows = 12;
  Pair src_w = input(src_rows, d + 3, 42), dst_w = output(rows, d + 1);
  const Pair src = cols(src_w, 3, 3 + d), dst = cols(dst_w, 0, d);
  cpu().merge_rows_fwd(src.ref, ia.ref, ib.ref, dst.ref);
  dev().merge_rows_fwd(src.dev, ia.dev, ib.dev, dst.dev);
  expect_close("merge_rows_fwd", dst_w, tol({1e-7, 1e-7}, {1e-5, 4e-3}));

  Pair ddst_w = input(rows, d + 2, 43);
  const Pair ddst = cols(ddst_w, 2, 2 + d);
  const std::vector<double> start = random_vector(std::size_t(src_rows) * (d + 6), 44);
  Pair dsrc_w = output(src_rows, d + 6), again_w = output(src_rows, d + 6);
  same_start(dsrc_w, start);
  same_start(again_w, start);
  const Pair dsrc = cols(dsrc_w, 6, 6 + d), again = cols(again_w, 6, 6 + d);
  cpu().merge_rows_bwd(ddst.ref, ia.ref, ib.ref, dsrc.ref);
  dev().merge_rows_bwd(ddst.dev, ia.dev, ib.dev, dsrc.dev);
  // bf16: a row fed by non-consecutive destination rows is rounded once per run.
  expect_close("merge_rows_bwd (added to dsrc)", dsrc_w, tol({1e-6, 1e-6}, {1e-5, 8e-3}));
  dev().merge_rows_bwd(ddst.dev, ia.dev, ib.dev, again.dev);
  expect_same_bits(dev(), dsrc_w.dev, again_w.dev, "merge_rows_bwd, two runs,");
}

TEST_P(CudaRowMapOps, MergeRowsOverManyRowsAndKeyChunks) {
  // A causal-ATM-like map on 600 rows (512 partitions; 1200 items, so two
  // staged key chunks): row r reads itself, and every third row also its
  // successor, which thus feeds two rows.
  const int n = 600, d = 40;
  std::vector<std::int32_t> a(n), b(n);
  for (int r = 0; r < n; ++r) {
    a[r] = r;
    b[r] = r % 3 == 0 && r + 1 < n ? r + 1 : -1;
  }
  Pair ia = index(a), ib = index(b);
  Pair src = input(n, d, 45), dst = output(n, d);
  cpu().merge_rows_fwd(src.ref, ia.ref, ib.ref, dst.ref);
  dev().merge_rows_fwd(src.dev, ia.dev, ib.dev, dst.dev);
  expect_close("merge_rows_fwd (600 rows)", dst, tol({1e-7, 1e-7}, {1e-5, 4e-3}));
  Pair ddst = input(n, d, 46), dsrc = output(n, d);
  same_start(dsrc, random_vector(std::size_t(n) * d, 47));
  cpu().merge_rows_bwd(ddst.ref, ia.ref, ib.ref, dsrc.ref);
  dev().merge_rows_bwd(ddst.dev, ia.dev, ib.dev, dsrc.dev);
  expect_close("merge_rows_bwd (600 rows)", dsrc, tol({1e-6, 1e-6}, {1e-5, 8e-3}));
}

// ---- cross-entropy ----------------------------------------------------------------------

WIOLA_DEVICE_OP_TEST(CudaLossOps, FusedSoftmaxForwardBackwardAndInPlace,
                     Op::cross_entropy_fwd, Op::cross_entropy_bwd) {
  // V = 300: not a multiple of the 256 threads that walk a row.
  const int n = 7, vocab = 300, w = vocab + 10;
  std::vector<double> v = random_vector(std::size_t(n) * w, 51, -4, 4);
  for (int c = 0; c < w; ++c) v[3 * w + c] += 60.0;  // a row far from zero
  Pair logits_w = input_as(dtype(), n, w, v);
  const Pair logits = cols(logits_w, 5, 5 + vocab);
  Pair targets = index({5, -1, 299, 0, -1, 150, 257});
  Pair loss = output_as(DType::F32, n, 1), lse = output_as(DType::F32, n, 1);
  cpu().cross_entropy_fwd(logits.ref, targets.ref, loss.ref, lse.ref);
  dev().cross_entropy_fwd(logits.dev, targets.dev, loss.dev, lse.dev);
  // fp32 statistics from the same inputs in both modes.
  expect_close("cross_entropy_fwd lse (fp32)", lse, {1e-6, 1e-6});
  expect_close("cross_entropy_fwd loss (fp32)", loss, {1e-5, 1e-6});
  const std::vector<double> l = read(dev(), loss.dev);
  EXPECT_EQ(l[1], 0.0);
  EXPECT_EQ(l[4], 0.0);

  const double scale = 0.37 / n;
  const Tolerance t = tol({1e-8, 1e-5}, {1e-7, 4e-3});
  Pair dl_w = output(n, vocab + 4);
  const Pair dl = cols(dl_w, 4, 4 + vocab);
  cpu().cross_entropy_bwd(logits.ref, targets.ref, lse.ref, scale, dl.ref);
  dev().cross_entropy_bwd(logits.dev, targets.dev, lse.dev, scale, dl.dev);
  expect_close("cross_entropy_bwd", dl_w, t);

  // In place: the gradient overwrites the logits.
  cpu().cross_entropy_bwd(logits.ref, targets.ref, lse.ref, scale, logits.ref);
  dev().cross_entropy_bwd(logits.dev, targets.dev, lse.dev, scale, logits.dev);
  expect_close("cross_entropy_bwd in place", logits_w, t);
}

// ---- the head: logits and loss a block of rows at a time ----------------------------------

// The CUDA head makes a block's logits in fp32 from the compute-dtype inputs,
// so in bf16 too the loss is within fp32's bounds of the fp64 reference on the
// same inputs (bf16 logits would be off by up to |z|·2⁻⁹); the gradients go
// through the compute dtype (dz rounded, then two products).
WIOLA_DEVICE_OP_TEST(CudaLossOps, HeadLossInBlocksOfRowsWithFp32Logits, Op::head_loss_fwd,
                     Op::head_loss_bwd) {
  const int n = 300, vocab = 300, d = 40;
  // A budget of 64 fp32 rows: 5 blocks of 60 rows in fp32; 8 blocks (7 of 38
  // and one of 34) in bf16, whose rows also hold their bf16 gradient.
  const std::size_t budget = std::size_t(64) * vocab * 4;
  dev().set_head_loss_block_bytes(budget);
  ASSERT_TRUE(dev().head_loss_keeps_no_logits());

  Pair xf_w = input(n, d + 3, 61, -1.5, 1.5), embed = input(vocab, d, 62, -1.5, 1.5);
  const Pair xf = cols(xf_w, 3, 3 + d);
  std::vector<std::int32_t> t(n);
  for (int i = 0; i < n; ++i) t[std::size_t(i)] = i % 11 == 4 ? -1 : (i * 97) % vocab;
  Pair targets = index(t);
  Pair loss = output_as(DType::F32, n, 1), lse = output_as(DType::F32, n, 1);
  // No more device memory than a block of rows takes: never the whole logits.
  auto within_one_block = [&](const Backend::MemoryStats& before, const char* what) {
    EXPECT_LE(dev().memory().peak, std::max(before.peak, before.in_use + budget + 16 * 1024))
        << what;
  };
  const Backend::MemoryStats before_fwd = dev().memory();
  cpu().head_loss_fwd(xf.ref, embed.ref, targets.ref, loss.ref, lse.ref);
  dev().head_loss_fwd(xf.dev, embed.dev, targets.dev, loss.dev, lse.dev);
  within_one_block(before_fwd, "head_loss_fwd");
  // |z| <= 40·1.5² = 90: an fp32 sum of 40 exact products is within
  // 40·2⁻²⁴·90 ≈ 2e-4 of z, and lse and loss within about that.
  expect_close("head_loss_fwd lse", lse, {3e-4, 1e-6});
  expect_close("head_loss_fwd loss", loss, {5e-4, 1e-6});

  const double scale = 0.37 / n;
  Pair dxf_w = output(n, d + 2), dembed = output_as(DType::F32, vocab, d);
  const Pair dxf = cols(dxf_w, 2, 2 + d);
  same_start(dembed, random_vector(std::size_t(vocab) * d, 63));  // added to
  const Backend::MemoryStats before_bwd = dev().memory();
  cpu().head_loss_bwd(xf.ref, embed.ref, targets.ref, lse.ref, scale, dxf.ref, dembed.ref);
  dev().head_loss_bwd(xf.dev, embed.dev, targets.dev, lse.dev, scale, dxf.dev, dembed.dev);
  within_one_block(before_bwd, "head_loss_bwd");

  // The device's dz = scale·(p − onehot) is off by u·|dz_ij| at most: p
  // through the logits' and lse's fp32 errors (5e-4 together, as above) and,
  // in bf16, dz's own rounding (2⁻⁹). Through the products (|x|, |e| <= 1.5)
  // that moves dxf_i by u·1.5·Σ_j|dz_ij| and dembed_j by u·1.5·Σ_i|dz_ij|,
  // taken here from the reference's dz.
  const Tensor z = cpu().alloc(DType::F64, n, vocab);
  cpu().linear_fwd(xf.ref, embed.ref, z, false);
  cpu().cross_entropy_bwd(z, targets.ref, lse.ref, scale, z);
  const std::vector<double> dz = read(cpu(), z);
  std::vector<double> row_sum(std::size_t(n), 0.0), col_sum(std::size_t(vocab), 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < vocab; ++j) {
      const double a = std::fabs(dz[std::size_t(i) * vocab + j]);
      row_sum[std::size_t(i)] += a;
      col_sum[std::size_t(j)] += a;
    }
  const double u = 5e-4 + (dtype() == DType::BF16 ? std::ldexp(1.0, -9) : 0.0);
  const double max_row = *std::max_element(row_sum.begin(), row_sum.end());
  const double max_col = *std::max_element(col_sum.begin(), col_sum.end());
  // dxf is rounded to the compute dtype once more; dembed is fp32.
  expect_close("head_loss_bwd dxf", dxf_w,
               {u * 1.5 * max_row, dtype() == DType::BF16 ? 4e-3 : 1e-6});
  expect_close("head_loss_bwd dembed", dembed, {u * 1.5 * max_col, 1e-6});

  // Ignored rows: no gradient; and the same bits on a second run.
  const std::vector<double> g = read(dev(), dxf.dev);
  for (int c = 0; c < d; ++c) EXPECT_EQ(g[std::size_t(4 * d + c)], 0.0);
  Pair dxf2 = output(n, d), dembed2 = output_as(DType::F32, vocab, d);
  same_start(dembed2, random_vector(std::size_t(vocab) * d, 63));
  dev().head_loss_bwd(xf.dev, embed.dev, targets.dev, lse.dev, scale, dxf2.dev, dembed2.dev);
  expect_same_bits(dev(), dxf.dev, dxf2.dev, "head_loss_bwd dxf");
  expect_same_bits(dev(), dembed.dev, dembed2.dev, "head_loss_bwd dembed");

  // A forward given the gradients' outputs makes them from its own blocks
  // of logits: the same products on the same rows, so the same bits, with
  // its loss and lse unchanged.
  Pair loss3 = output_as(DType::F32, n, 1), lse3 = output_as(DType::F32, n, 1);
  Pair dxf3 = output(n, d), dembed3 = output_as(DType::F32, vocab, d);
  same_start(dembed3, random_vector(std::size_t(vocab) * d, 63));
  const Backend::MemoryStats before_both = dev().memory();
  dev().head_loss_fwd(xf.dev, embed.dev, targets.dev, loss3.dev, lse3.dev,
                      {scale, dxf3.dev, dembed3.dev});
  within_one_block(before_both, "head_loss_fwd with gradients");
  expect_same_bits(dev(), loss3.dev, loss.dev, "head_loss_fwd with gradients: loss");
  expect_same_bits(dev(), lse3.dev, lse.dev, "head_loss_fwd with gradients: lse");
  expect_same_bits(dev(), dxf3.dev, dxf2.dev, "head_loss_fwd with gradients: dxf");
  expect_same_bits(dev(), dembed3.dev, dembed2.dev, "head_loss_fwd with gradients: dembed");
}

// ---- argument checks --------------------------------------------------------------------

void expect_refused(const std::function<void()>& call, const std::string& message) {
  try {
    call();
    ADD_FAILURE() << "accepted; expected a refusal containing \"" << message << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST_P(CudaLayerOpChecks, RefusalsNameTheOpAndTheTensor) {
  Backend& be = dev();
  const DType dt = dtype(), other = dt == DType::BF16 ? DType::F32 : DType::BF16;
  const Tensor x = be.alloc(dt, 4, 8), row = be.alloc(dt, 1, 8), col = be.alloc(DType::F32, 4, 1);
  const Tensor idx = be.alloc(DType::I32, 4, 1);
  // Statistics and parameter gradients must be fp32 whatever the compute dtype.
  expect_refused([&] { be.wrmsnorm_fwd(x, row, row, 1e-6, x, be.alloc(DType::BF16, 4, 1)); },
                 "wrmsnorm_fwd: rstd is bf16, expected fp32");
  expect_refused(
      [&] {
        be.wrmsnorm_bwd(x, row, row, col, x, x, false, be.alloc(DType::BF16, 1, 8),
                        be.alloc(DType::F32, 1, 8));
      },
      "wrmsnorm_bwd: dgamma is bf16, expected fp32");
  expect_refused([&] { be.embedding_bwd(idx, x, be.alloc(DType::BF16, 10, 8)); },
                 "embedding_bwd: dtable is bf16, expected fp32");
  expect_refused([&] { be.cross_entropy_fwd(x, be.alloc(DType::F32, 4, 1), col, col); },
                 "cross_entropy_fwd: targets is fp32, expected i32");
  expect_refused([&] { be.cross_entropy_bwd(x, idx, col, 1.0, be.alloc(other, 4, 8)); },
                 "cross_entropy_bwd: dlogits is");
  const Tensor table = be.alloc(dt, 10, 8), bf16_table = be.alloc(DType::BF16, 10, 8);
  expect_refused([&] { be.head_loss_bwd(x, table, idx, col, 1.0, x, bf16_table); },
                 "head_loss_bwd: dembed is bf16, expected fp32");
  expect_refused([&] { be.head_loss_fwd(x, table, idx, col, col, {1.0, x, Tensor{}}); },
                 "head_loss_fwd: grads.dembed");
  expect_refused([&] { be.srpe_fwd(x, idx, col, col, 3, RotaryPairs::Half, x); },
                 "srpe_fwd: head_dim 3");
  expect_refused(
      [&] { be.srpe_fwd(x, idx, be.alloc(DType::BF16, 4, 2), col, 4, RotaryPairs::Half, x); },
      "srpe_fwd: cos_tab is bf16, expected fp32");
  expect_refused([&] { be.summary_fwd(SummaryMode::Sequence, x, 2, 2, x); },
                 "summary_fwd: s is 4x8, expected 2x8");
  expect_refused([&] { be.summary_bwd(SummaryMode::Causal, x, 3, 2, x); },
                 "summary_bwd: dx is 4x8, expected 6x8");
  expect_refused([&] { be.row_cosine_next(x, 2, 2, be.alloc(dt, 4, 2)); }, "row_cosine_next: rho");
  TokenPlanTensors plan;
  plan.index = {idx, idx, idx, idx};
  plan.pos_q = plan.pos_kv = plan.merge_a = plan.merge_b = plan.groups = idx;
  expect_refused([&] { be.atm_plan(col, 2, 2, 0.5, AtmMode::Off, SummaryMode::Causal, plan); },
                 "atm_plan: ATM is off");
  expect_refused([&] { be.atm_plan(col, 4, 1, 0.5, AtmMode::Paper, SummaryMode::Causal, plan); },
                 "atm_plan: unmerge is an undefined tensor");
  expect_refused([&] { be.atm_plan(col, 2, 2, 0.5, AtmMode::Causal, SummaryMode::Causal, plan); },
                 "atm_plan: n_queries is 4x1, expected 2x1");
  expect_refused([&] { be.merge_rows_bwd(be.alloc(other, 4, 8), idx, idx, x); },
                 "merge_rows_bwd: ddst is");
  expect_refused([&] { be.merge_rows_fwd(x, idx, be.alloc(DType::I32, 3, 1), x); },
                 "merge_rows_fwd: idx_b is 3x1, expected 4x1");
  expect_refused([&] { be.embedding_fwd(idx, x, be.alloc(dt, 4, 7)); },
                 "embedding_fwd: out is 4x7, expected 4x8");
  expect_refused(
      [&] { be.add_wrmsnorm_fwd(x, be.alloc(dt, 3, 8), row, row, 1e-6, x, x, col); },
      "add_wrmsnorm_fwd: r is 3x8, expected 4x8");
  const Tensor wide = be.alloc(dt, 1, 4097), one = col.rows_slice(0, 1);
  expect_refused([&] { be.wrmsnorm_fwd(wide, wide, wide, 1e-6, wide, one); },
                 "wrmsnorm_fwd: x is 1x4097; rows wider than 4096 columns");
}

WIOLA_DEVICE_OP_SUITE(CudaEmbeddingOps);
WIOLA_DEVICE_OP_SUITE(CudaNormOps);
WIOLA_DEVICE_OP_SUITE(CudaSrpeOps);
WIOLA_DEVICE_OP_SUITE(CudaSummaryOps);
WIOLA_DEVICE_OP_SUITE(CudaRowMapOps);
WIOLA_DEVICE_OP_SUITE(CudaLossOps);
WIOLA_DEVICE_OP_SUITE(CudaLayerOpChecks);

}  // namespace
}  // namespace wiola::test
