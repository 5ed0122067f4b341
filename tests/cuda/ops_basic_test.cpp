// The CUDA backend's memory, elementwise, reduction, linear and optimizer ops
// against the CPU backend in fp64 (device_compare.hpp), in fp32 and bf16.
#include <limits>
#include <string_view>
#include <tuple>

#include "device_compare.hpp"

namespace wiola::test {
namespace {

class CudaMemoryOps : public DeviceOpTest {};
class CudaElementwiseOps : public DeviceOpTest {};
class CudaReductionOps : public DeviceOpTest {};
class CudaLinearOps : public DeviceOpTest {};
class CudaOptimizerOps : public DeviceOpTest {};

WIOLA_DEVICE_OP_TEST(CudaMemoryOps, FillCopyConvertAndHostTransfersAreExact,
                     Op::fill, Op::copy, Op::convert, Op::to_host, Op::from_host) {
  Pair a = input(7, 13, 1);
  // Host round trip of a contiguous tensor.
  EXPECT_EQ(read(dev(), a.dev), a.values);
  // Strided copy: columns [3, 9) of a into a fresh tensor.
  Pair sub = output(7, 6);
  cpu().copy(a.ref.cols_slice(3, 9), sub.ref);
  dev().copy(a.dev.cols_slice(3, 9), sub.dev);
  expect_close("copy of a column slice", sub, {0, 0});
  // Fill of a strided view.
  cpu().fill(a.ref.cols_slice(2, 5), 0.75);
  dev().fill(a.dev.cols_slice(2, 5), 0.75);
  expect_close("fill of a column slice", a, {0, 0});
  // Conversion to fp32 and back.
  const Tensor f = dev().alloc(DType::F32, 7, 13);
  dev().convert(a.dev, f);
  EXPECT_EQ(read(dev(), f), read(dev(), a.dev));
  // fp32 -> bf16 rounds to nearest even, as round_to does.
  const std::vector<double> fine = random_vector(64, 2, -3, 3);
  const Tensor src = upload(dev(), DType::F32, 8, 8, fine);
  const Tensor b16 = dev().alloc(DType::BF16, 8, 8);
  dev().convert(src, b16);
  const std::vector<double> got = read(dev(), b16);
  for (std::size_t i = 0; i < fine.size(); ++i)
    ASSERT_EQ(got[i], round_to(DType::BF16, double(float(fine[i])))) << i;
}

TEST_P(CudaMemoryOps, AllocationsAreZeroedAndIndexTensorsWork) {
  const Tensor z = dev().alloc(dtype(), 33, 17);
  for (double v : read(dev(), z)) ASSERT_EQ(v, 0.0);
  Pair idx = index({5, -1, 7, 0});
  EXPECT_EQ(read(dev(), idx.dev), (std::vector<double>{5, -1, 7, 0}));
}

// Raw bytes into device memory and back (a transport that reads only host
// memory stages device buffers this way), at an offset inside a tensor.
WIOLA_DEVICE_OP_TEST(CudaMemoryOps, RawBytesThroughHostMemory, Op::copy_from_host,
                     Op::copy_to_host) {
  Pair a = input(5, 9, 3);
  const std::vector<double> values = random_vector(9, 4, -2, 2);
  Pair row = input_as(dtype(), 1, 9, values);
  // Row 2 of a becomes `row`: staged through host bytes on both backends.
  for (auto [be, from, to] : {std::tuple{&dev(), &row.dev, &a.dev}, {&cpu(), &row.ref, &a.ref}}) {
    const std::size_t size = dtype_size(from->dtype()) * 9;
    std::vector<unsigned char> staged(size);
    be->copy_to_host(from->data(), staged.data(), size);
    be->copy_from_host(staged.data(), static_cast<unsigned char*>(to->data()) + 2 * size, size);
  }
  expect_close("a row staged through host memory", a, {0, 0});
}

// Fill, copy and convert move 16-byte chunks when every view's rows start
// 16-byte aligned and hold whole chunks, and single elements otherwise; the
// values are the same either way, and nothing outside the view is touched.
// The placements of a 12 x 64 view: a tensor of its own, columns [8, 72) of a
// 12 x 80 tensor (chunked), columns [1, 65) of a 12 x 65 tensor (neither
// aligned nor whole chunks). Sources in the suite's dtype, destinations in
// bf16, fp32 and fp64 (same dtype: a copy).
WIOLA_DEVICE_OP_TEST(CudaMemoryOps, ChunkedAndElementwisePathsGiveTheSameValues, Op::fill,
                     Op::copy, Op::convert) {
  constexpr std::int64_t R = 12, C = 64;
  const std::vector<double> values = random_vector(R * C, 21, -3, 3);
  const auto stored = [](DType t, double v) {
    return t == DType::F64 ? v : round_to(t, double(float(v)));
  };
  struct Placement {
    std::int64_t width, first;
  };
  constexpr double kOutside = 7.0;
  for (const Placement p : {Placement{C, 0}, Placement{80, 8}, Placement{65, 1}}) {
    // A view of R x C at columns [first, first + C) of a wide tensor whose
    // other columns hold kOutside; `inside(i, j)` is the view's element.
    const auto place = [&](DType t, const auto& inside) {
      std::vector<double> host(static_cast<std::size_t>(R * p.width), kOutside);
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t j = 0; j < C; ++j) host[i * p.width + p.first + j] = inside(i, j);
      return upload(dev(), t, R, p.width, host);
    };
    const auto check = [&](std::string_view what, const Tensor& wide, const auto& expected) {
      const std::vector<double> got = read(dev(), wide);
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t j = 0; j < p.width; ++j) {
          const bool in = j >= p.first && j < p.first + C;
          ASSERT_EQ(got[i * p.width + j], in ? expected(i, j - p.first) : kOutside)
              << what << ", placement " << p.width << "/" << p.first << ", row " << i
              << ", column " << j;
        }
    };
    const auto value = [&](std::int64_t i, std::int64_t j) { return values[i * C + j]; };
    const Tensor src_wide = place(dtype(), value);
    const Tensor src = src_wide.cols_slice(p.first, p.first + C);
    for (DType to : {DType::BF16, DType::F32, DType::F64}) {
      const Tensor dst_wide = place(to, [](std::int64_t, std::int64_t) { return 0.0; });
      const Tensor dst = dst_wide.cols_slice(p.first, p.first + C);
      if (to == dtype())
        dev().copy(src, dst);
      else
        dev().convert(src, dst);
      check(dtype_name(to), dst_wide, [&](std::int64_t i, std::int64_t j) {
        return stored(to, stored(dtype(), value(i, j)));
      });
      dev().fill(dst, -0.3);
      check("fill", dst_wide, [&](std::int64_t, std::int64_t) { return stored(to, -0.3); });
    }
  }
}

// The elementwise kernel moves 16-byte packs when every view's rows start
// 16-byte aligned and hold whole packs (a contiguous tensor as one long row,
// or a strided view), and single elements otherwise: the same arithmetic, so
// the same bits whichever runs. The three placements of the same 12 x 64
// values: a tensor of its own, columns [8, 72) of a 12 x 80 tensor, and
// columns [1, 65) of a 12 x 65 tensor (neither aligned nor whole packs).
TEST_P(CudaElementwiseOps, PackedAndElementwisePathsGiveTheSameBits) {
  constexpr std::int64_t R = 12, C = 64;
  const Pair g = input(R, C, 11), x = input(R, C, 12), dy = input(R, C, 13);
  struct Placement {
    std::int64_t width, first;
  };
  const Placement places[] = {{C, 0}, {80, 8}, {65, 1}};
  std::vector<std::vector<double>> results[3];
  for (int p = 0; p < 3; ++p) {
    const auto place = [&](const Tensor& src) {
      const Tensor wide = dev().alloc(dtype(), R, places[p].width);
      const Tensor view = wide.cols_slice(places[p].first, places[p].first + C);
      dev().copy(src, view);
      return view;
    };
    const auto result = [&](const Tensor& view) {
      const Tensor flat = dev().alloc(dtype(), R, C);
      dev().copy(view, flat);
      return read(dev(), flat);
    };
    const Tensor gv = place(g.dev), xv = place(x.dev), dyv = place(dy.dev);
    const Tensor y = place(x.dev), dg = place(x.dev), dx = place(x.dev), sum = place(x.dev);
    dev().sigmoid_mul_fwd(gv, xv, y);                // 2 inputs, 1 output
    dev().sigmoid_mul_bwd(gv, xv, dyv, dg, dx);      // 3 inputs, 2 outputs
    dev().add(gv, xv, sum);
    dev().axpy(0.75, dyv, sum);                      // in place
    dev().scale(dx, -1.25);                          // no input but the output
    results[p] = {result(y), result(dg), result(dx), result(sum)};
  }
  const char* names[] = {"sigmoid_mul_fwd", "sigmoid_mul_bwd dg", "sigmoid_mul_bwd dx, scaled",
                         "add then axpy"};
  for (int p = 1; p < 3; ++p)
    for (int k = 0; k < 4; ++k)
      for (std::size_t i = 0; i < results[0][k].size(); ++i)
        ASSERT_EQ(results[p][k][i], results[0][k][i])
            << names[k] << ", placement " << p << ", element " << i;
}

WIOLA_DEVICE_OP_TEST(CudaElementwiseOps, AddAxpyScale, Op::add, Op::axpy, Op::scale) {
  const Tolerance t = tol({1e-7, 1e-6}, {1e-6, 8e-3});
  Pair a = input(9, 70, 3), b = input(9, 70, 4), out = output(9, 70);
  cpu().add(a.ref, b.ref, out.ref);
  dev().add(a.dev, b.dev, out.dev);
  expect_close("add", out, t);
  cpu().axpy(-0.375, a.ref, b.ref);
  dev().axpy(-0.375, a.dev, b.dev);
  expect_close("axpy", b, t);
  // In place on a strided view.
  cpu().scale(a.ref.cols_slice(10, 50), 1.5);
  dev().scale(a.dev.cols_slice(10, 50), 1.5);
  expect_close("scale of a column slice", a, t);
}

WIOLA_DEVICE_OP_TEST(CudaElementwiseOps, GatesActivationsAndFusionForwardAndBackward,
                     Op::sigmoid_mul_fwd, Op::sigmoid_mul_bwd, Op::silu_mul_fwd,
                     Op::silu_mul_bwd, Op::gelu_fwd, Op::gelu_bwd, Op::fusion_fwd,
                     Op::fusion_bwd) {
  const Tolerance t = tol({1e-6, 1e-5}, {1e-5, 8e-3});
  const int n = 11, c = 97;
  Pair g = input(n, c, 5, -6, 6), x = input(n, c, 6, -2, 2), dy = input(n, c, 7);
  Pair y = output(n, c), dg = output(n, c), dx = output(n, c);
  cpu().sigmoid_mul_fwd(g.ref, x.ref, y.ref);
  dev().sigmoid_mul_fwd(g.dev, x.dev, y.dev);
  expect_close("sigmoid_mul_fwd", y, t);
  cpu().sigmoid_mul_bwd(g.ref, x.ref, dy.ref, dg.ref, dx.ref);
  dev().sigmoid_mul_bwd(g.dev, x.dev, dy.dev, dg.dev, dx.dev);
  expect_close("sigmoid_mul_bwd dg", dg, t);
  expect_close("sigmoid_mul_bwd dx", dx, t);

  cpu().silu_mul_fwd(g.ref, x.ref, y.ref);
  dev().silu_mul_fwd(g.dev, x.dev, y.dev);
  expect_close("silu_mul_fwd", y, t);
  cpu().silu_mul_bwd(g.ref, x.ref, dy.ref, dg.ref, dx.ref);
  dev().silu_mul_bwd(g.dev, x.dev, dy.dev, dg.dev, dx.dev);
  expect_close("silu_mul_bwd dg", dg, t);
  expect_close("silu_mul_bwd du", dx, t);

  cpu().gelu_fwd(g.ref, y.ref);
  dev().gelu_fwd(g.dev, y.dev);
  expect_close("gelu_fwd", y, t);
  cpu().gelu_bwd(g.ref, dy.ref, dx.ref);
  dev().gelu_bwd(g.dev, dy.dev, dx.dev);
  expect_close("gelu_bwd", dx, t);

  Pair a = input(n, c, 8), b = input(n, c, 9), db = output(n, c);
  cpu().fusion_fwd(g.ref, a.ref, b.ref, y.ref);
  dev().fusion_fwd(g.dev, a.dev, b.dev, y.dev);
  expect_close("fusion_fwd", y, t);
  cpu().fusion_bwd(g.ref, a.ref, b.ref, dy.ref, dg.ref, dx.ref, db.ref);
  dev().fusion_bwd(g.dev, a.dev, b.dev, dy.dev, dg.dev, dx.dev, db.dev);
  expect_close("fusion_bwd dlogits", dg, t);
  expect_close("fusion_bwd da", dx, t);
  expect_close("fusion_bwd db", db, t);
}

// The fusion added to the residual in one pass: against the CPU, and the same
// bits as the device's fusion_fwd followed by its add.
WIOLA_DEVICE_OP_TEST(CudaElementwiseOps, FusionAddedToTheResidualInOnePass, Op::fusion_add_fwd) {
  const int n = 11, c = 97;
  Pair g = input(n, c, 15, -6, 6), a = input(n, c, 16), b = input(n, c, 17);
  Pair res_w = input(n, c + 5, 18, -2, 2), out_w = output(n, c + 3);
  const Pair res = cols(res_w, 4, 4 + c), out = cols(out_w, 1, 1 + c);
  cpu().fusion_add_fwd(g.ref, a.ref, b.ref, res.ref, out.ref);
  dev().fusion_add_fwd(g.dev, a.dev, b.dev, res.dev, out.dev);
  // bf16: the fusion (|f| <= max(|a|, |b|) <= 1) is rounded before the add,
  // 2^-9 absolute at most, which the sum may not cancel; the sum rounds again.
  expect_close("fusion_add_fwd", out_w, tol({1e-6, 1e-5}, {2e-3, 4e-3}));

  const Tensor f = dev().alloc(dtype(), n, c), sum = dev().alloc(dtype(), n, c);
  dev().fusion_fwd(g.dev, a.dev, b.dev, f);
  dev().add(res.dev, f, sum);
  expect_same_bits(dev(), out.dev, sum, "fusion_add_fwd against fusion_fwd, add");
}

// The DSFF's two activations in one pass, on views as the layer has them
// (ga, ua the halves of one product's output): against the CPU and the same
// bits as the separate ops, with whole 16-byte packs (one launch) and without
// (one launch each: device_counters_test.cpp counts them).
WIOLA_DEVICE_OP_TEST(CudaElementwiseOps, DsffActivationsInOnePass, Op::dsff_act_fwd,
                     Op::dsff_act_bwd) {
  const Tolerance t = tol({1e-6, 1e-5}, {1e-5, 8e-3});
  const int n = 9;
  for (const int da : {16, 13}) {  // whole 16-byte packs, or not
    SCOPED_TRACE(da);
    const int db = 3 * da;
    Pair gu = input(n, 2 * da, 20, -6, 6), ub = input(n, db, 21, -3, 3);
    const Pair ga = cols(gu, 0, da), ua = cols(gu, da, 2 * da);
    Pair dha = input(n, da, 22), dhb = input(n, db, 23);
    Pair ha = output(n, da), hb = output(n, db), dgu = output(n, 2 * da), dub = output(n, db);
    const Pair dga = cols(dgu, 0, da), dua = cols(dgu, da, 2 * da);

    cpu().dsff_act_fwd(ga.ref, ua.ref, ub.ref, ha.ref, hb.ref);
    dev().dsff_act_fwd(ga.dev, ua.dev, ub.dev, ha.dev, hb.dev);
    expect_close("dsff_act_fwd ha", ha, t);
    expect_close("dsff_act_fwd hb", hb, t);
    cpu().dsff_act_bwd(ga.ref, ua.ref, dha.ref, ub.ref, dhb.ref, dga.ref, dua.ref, dub.ref);
    dev().dsff_act_bwd(ga.dev, ua.dev, dha.dev, ub.dev, dhb.dev, dga.dev, dua.dev, dub.dev);
    expect_close("dsff_act_bwd dga, dua", dgu, t);
    expect_close("dsff_act_bwd dub", dub, t);

    const Tensor ha2 = dev().alloc(dtype(), n, da), hb2 = dev().alloc(dtype(), n, db);
    dev().silu_mul_fwd(ga.dev, ua.dev, ha2);
    dev().gelu_fwd(ub.dev, hb2);
    expect_same_bits(dev(), ha.dev, ha2, "dsff_act_fwd ha against silu_mul_fwd");
    expect_same_bits(dev(), hb.dev, hb2, "dsff_act_fwd hb against gelu_fwd");
    const Tensor dga2 = dev().alloc(dtype(), n, da), dua2 = dev().alloc(dtype(), n, da);
    const Tensor dub2 = dev().alloc(dtype(), n, db);
    dev().silu_mul_bwd(ga.dev, ua.dev, dha.dev, dga2, dua2);
    dev().gelu_bwd(ub.dev, dhb.dev, dub2);
    expect_same_bits(dev(), dga.dev, dga2, "dsff_act_bwd dga against silu_mul_bwd");
    expect_same_bits(dev(), dua.dev, dua2, "dsff_act_bwd dua against silu_mul_bwd");
    expect_same_bits(dev(), dub.dev, dub2, "dsff_act_bwd dub against gelu_bwd");
  }
  // Branches over different rows are refused by name.
  const Tensor a = dev().alloc(dtype(), 4, 8), b = dev().alloc(dtype(), 5, 8);
  try {
    dev().dsff_act_fwd(a, a, b, a, b);
    FAIL() << "branches of different rows accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dsff_act_fwd: ub is 5x8"), std::string::npos)
        << e.what();
  }
}

TEST_P(CudaElementwiseOps, MixedDtypesAreRefusedByName) {
  const Tensor a = dev().alloc(dtype(), 2, 2);
  const Tensor other = dev().alloc(dtype() == DType::BF16 ? DType::F32 : DType::BF16, 2, 2);
  try {
    dev().add(a, other, a);
    FAIL() << "mixed dtypes accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("add: b is"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dev().add(a, cpu().alloc(DType::F32, 2, 2), a), Error);  // a CPU tensor
}

WIOLA_DEVICE_OP_TEST(CudaReductionOps, SumAndSumSquaresAccumulateInDouble, Op::sum,
                     Op::sum_squares) {
  // Several 4096-element chunks, a strided view, and a start value in the accumulator.
  Pair x = input(37, 401, 10, -3, 3);
  for (bool squares : {false, true}) {
    Pair acc = output_as(DType::F64, 1, 1);
    same_start(acc, {0.25});
    const Tensor view_ref = x.ref.cols_slice(5, 400), view_dev = x.dev.cols_slice(5, 400);
    if (squares) {
      cpu().sum_squares(view_ref, acc.ref);
      dev().sum_squares(view_dev, acc.dev);
    } else {
      cpu().sum(view_ref, acc.ref);
      dev().sum(view_dev, acc.dev);
    }
    expect_close(squares ? "sum_squares" : "sum", acc, {1e-9, 1e-12});
  }
  // NaN propagates.
  std::vector<double> v(5000, 1.0);
  v[4321] = std::numeric_limits<double>::quiet_NaN();
  const Tensor bad = upload(dev(), dtype(), 1, 5000, v);
  const Tensor acc = dev().alloc(DType::F64, 1, 1);
  dev().sum_squares(bad, acc);
  EXPECT_TRUE(std::isnan(read(dev(), acc)[0]));
}

WIOLA_DEVICE_OP_TEST(CudaLinearOps, ForwardAndBothBackwardsOnStridedViews,
                     Op::linear_fwd, Op::linear_bwd_data, Op::linear_bwd_weight) {
  const int n = 45, in = 96, out = 40;
  // x and dy are column slices of wider buffers (ld > cols).
  Pair xw = input(n, in + 16, 11), w = input(out, in, 12), dyw = input(n, out + 8, 13);
  const Tensor x_ref = xw.ref.cols_slice(16, in + 16), x_dev = xw.dev.cols_slice(16, in + 16);
  const Tensor dy_ref = dyw.ref.cols_slice(0, out), dy_dev = dyw.dev.cols_slice(0, out);
  const Tolerance t = tol({1e-5, 1e-5}, {2e-2, 8e-3});

  Pair y = output(n, out);
  same_start(y, random_vector(std::size_t(n) * out, 14));
  cpu().linear_fwd(x_ref, w.ref, y.ref, true);
  dev().linear_fwd(x_dev, w.dev, y.dev, true);
  expect_close("linear_fwd (accumulate)", y, t);
  cpu().linear_fwd(x_ref, w.ref, y.ref, false);
  dev().linear_fwd(x_dev, w.dev, y.dev, false);
  expect_close("linear_fwd", y, t);

  Pair dx = output(n, in);
  cpu().linear_bwd_data(dy_ref, w.ref, dx.ref, false);
  dev().linear_bwd_data(dy_dev, w.dev, dx.dev, false);
  expect_close("linear_bwd_data", dx, t);

  // Weight gradients are fp32 whatever the compute dtype, added to what is there.
  Pair dw = output_as(DType::F32, out, in);
  same_start(dw, random_vector(std::size_t(out) * in, 15));
  cpu().linear_bwd_weight(dy_ref, x_ref, dw.ref);
  dev().linear_bwd_weight(dy_dev, x_dev, dw.dev);
  expect_close("linear_bwd_weight (fp32 accumulate)", dw, {1e-5, 1e-5});
}

// A weight stacked from parts ([W_q; W_gate] in the layer): the device runs
// one product over the whole of it, the CPU one per part (the bits each part
// has as a weight of its own), and both agree within the product's bounds.
WIOLA_DEVICE_OP_TEST(CudaLinearOps, StackedWeightsOneProductOnTheDeviceOnePerPartOnTheCpu,
                     Op::linear_fwd_stacked, Op::linear_bwd_data_stacked) {
  const int n = 45, in = 96, top = 40, bottom = 24;
  const std::int64_t parts[] = {top, bottom};
  Pair xw = input(n, in + 16, 21), w = input(top + bottom, in, 22);
  Pair dyw = input(n, top + bottom + 8, 23);
  const Pair x = cols(xw, 16, in + 16), dy = cols(dyw, 8, top + bottom + 8);
  const Tolerance t = tol({1e-5, 1e-5}, {2e-2, 8e-3});

  Pair y = output(n, top + bottom);
  cpu().linear_fwd_stacked(x.ref, w.ref, parts, y.ref);
  dev().linear_fwd_stacked(x.dev, w.dev, parts, y.dev);
  expect_close("linear_fwd_stacked", y, t);
  const Tensor y_one = dev().alloc(dtype(), n, top + bottom), y_parts = cpu().alloc(DType::F64, n, top + bottom);
  dev().linear_fwd(x.dev, w.dev, y_one, false);
  expect_same_bits(dev(), y.dev, y_one, "the device's stacked product against one linear_fwd");
  cpu().linear_fwd(x.ref, w.ref.rows_slice(0, top), y_parts.cols_slice(0, top), false);
  cpu().linear_fwd(x.ref, w.ref.rows_slice(top, top + bottom), y_parts.cols_slice(top, top + bottom),
                   false);
  EXPECT_EQ(read(cpu(), y.ref), read(cpu(), y_parts)) << "the CPU's stacked product is not its parts'";

  for (const bool accumulate : {false, true}) {
    SCOPED_TRACE(accumulate ? "added into dx" : "dx written");
    Pair dx = output(n, in);
    same_start(dx, random_vector(std::size_t(n) * in, 24));
    const std::vector<double> start = read(cpu(), dx.ref);
    cpu().linear_bwd_data_stacked(dy.ref, w.ref, parts, dx.ref, accumulate);
    dev().linear_bwd_data_stacked(dy.dev, w.dev, parts, dx.dev, accumulate);
    expect_close("linear_bwd_data_stacked", dx, t);
    const Tensor dx_parts = cpu().alloc(DType::F64, n, in);
    if (accumulate) write(cpu(), dx_parts, start);
    cpu().linear_bwd_data(dy.ref.cols_slice(0, top), w.ref.rows_slice(0, top), dx_parts, accumulate);
    cpu().linear_bwd_data(dy.ref.cols_slice(top, top + bottom), w.ref.rows_slice(top, top + bottom),
                          dx_parts, true);
    EXPECT_EQ(read(cpu(), dx.ref), read(cpu(), dx_parts)) << "the CPU's stacked product is not its parts'";
  }

  const std::int64_t short_parts[] = {top, bottom - 1};
  try {
    dev().linear_fwd_stacked(x.dev, w.dev, short_parts, y.dev);
    ADD_FAILURE() << "parts short of w's rows accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("linear_fwd_stacked: the parts have 63 rows in all but w has 64"),
              std::string::npos)
        << e.what();
  }
}

WIOLA_DEVICE_OP_TEST(CudaOptimizerOps, AdamWOnFp32MasterWeights, Op::adamw_step) {
  const int n = 1000;
  Pair p = input_as(DType::F32, 1, n, random_vector(n, 16));
  Pair g = input_as(DType::F32, 1, n, random_vector(n, 17, -0.1, 0.1));
  Pair m = input_as(DType::F32, 1, n, random_vector(n, 18, -0.01, 0.01));
  Pair v = input_as(DType::F32, 1, n, random_vector(n, 19, 0.0, 0.001));
  const Backend::AdamW h{3e-4, 0.9, 0.95, 1e-8, 0.1, 0.5, 7};
  cpu().adamw_step(h, p.ref, g.ref, m.ref, v.ref);
  dev().adamw_step(h, p.dev, g.dev, m.dev, v.dev);
  // The device stores fp32; the reference fp64: the difference is fp32 rounding.
  expect_close("adamw param", p, {1e-7, 1e-6});
  expect_close("adamw m", m, {1e-9, 1e-6});
  expect_close("adamw v", v, {1e-11, 1e-6});
  // Master weights must be fp32.
  const Tensor b16 = dev().alloc(DType::BF16, 1, 4);
  EXPECT_THROW(dev().adamw_step(h, b16, b16, b16, b16), Error);
}

// AdamW moves 16-byte chunks of each array when all four start 16-byte
// aligned and the range holds whole chunks, single elements otherwise: the
// same update per element, so the same bits. The same 1000 values at offset
// 0 (chunked) and at offset 1 of a 1001-wide row (element by element).
WIOLA_DEVICE_OP_TEST(CudaOptimizerOps, AdamWChunkedAndElementwisePathsGiveTheSameBits,
                     Op::adamw_step) {
  const int n = 1000;
  const Backend::AdamW h{3e-4, 0.9, 0.95, 1e-8, 0.1, 0.5, 7};
  std::vector<double> result[2][3];
  for (int offset : {0, 1}) {
    const auto place = [&](std::uint64_t seed, double lo, double hi) {
      std::vector<double> host(n + offset, 0.0);
      const std::vector<double> values = random_vector(n, seed, lo, hi);
      std::copy(values.begin(), values.end(), host.begin() + offset);
      return upload(dev(), DType::F32, 1, n + offset, host).cols_slice(offset, offset + n);
    };
    const Tensor p = place(16, -1, 1), g = place(17, -0.1, 0.1), m = place(18, -0.01, 0.01),
                 v = place(19, 0.0, 0.001);
    dev().adamw_step(h, p, g, m, v);
    result[offset][0] = read(dev(), p);
    result[offset][1] = read(dev(), m);
    result[offset][2] = read(dev(), v);
  }
  const char* names[] = {"param", "m", "v"};
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(result[1][k][i], result[0][k][i]) << names[k] << ", element " << i;
}

WIOLA_DEVICE_OP_SUITE(CudaMemoryOps);
WIOLA_DEVICE_OP_SUITE(CudaElementwiseOps);
WIOLA_DEVICE_OP_SUITE(CudaReductionOps);
WIOLA_DEVICE_OP_SUITE(CudaLinearOps);
WIOLA_DEVICE_OP_SUITE(CudaOptimizerOps);

}  // namespace
}  // namespace wiola::test
