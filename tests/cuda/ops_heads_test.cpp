// The CUDA backend's per-head maps (head_mean, head_scale; Wiola 13M's gate)
// against the CPU backend in fp64 (device_compare.hpp), in fp32 and bf16:
// strided views, accumulate, in place, and the same bits on every run.
#include <string>

#include "device_compare.hpp"

namespace wiola::test {
namespace {

class CudaHeadOps : public DeviceOpTest {};

// 8 heads of 32 (Wiola 13M's preset) and 3 heads of 5 (odd widths).
struct Shape {
  int n, heads, dh;
};
const Shape kShapes[] = {{300, 8, 32}, {37, 3, 5}};

WIOLA_DEVICE_OP_TEST(CudaHeadOps, MeanForwardAndBackward, Op::head_mean_fwd, Op::head_mean_bwd) {
  for (const Shape& sh : kShapes) {
    const std::string at = " (H " + std::to_string(sh.heads) + ", dh " + std::to_string(sh.dh) + ")";
    const int w = sh.heads * sh.dh;
    Pair x_w = input(sh.n, w + 5, 10 + sh.dh, -2, 2), y_w = output(sh.n, sh.dh + 3);
    const Pair x = cols(x_w, 5, 5 + w), y = cols(y_w, 1, 1 + sh.dh);
    cpu().head_mean_fwd(x.ref, sh.dh, y.ref);
    dev().head_mean_fwd(x.dev, sh.dh, y.dev);
    // A mean of H values: fp32 summation order; bf16: the output's rounding.
    expect_close("head_mean_fwd" + at, y_w, tol({1e-6, 1e-5}, {1e-5, 4e-3}));

    Pair dy = input(sh.n, sh.dh, 20 + sh.dh);
    Pair dx = output(sh.n, w);
    cpu().head_mean_bwd(dy.ref, sh.dh, dx.ref, false);
    dev().head_mean_bwd(dy.dev, sh.dh, dx.dev, false);
    expect_close("head_mean_bwd" + at, dx, tol({1e-7, 1e-6}, {1e-6, 4e-3}));
    Pair acc_w = output(sh.n, w + 2);
    same_start(acc_w, random_vector(std::size_t(sh.n) * (w + 2), 30 + sh.dh));
    const Pair acc = cols(acc_w, 2, 2 + w);
    cpu().head_mean_bwd(dy.ref, sh.dh, acc.ref, true);
    dev().head_mean_bwd(dy.dev, sh.dh, acc.dev, true);
    expect_close("head_mean_bwd (accumulate)" + at, acc_w, tol({1e-6, 1e-5}, {1e-5, 8e-3}));
  }
}

WIOLA_DEVICE_OP_TEST(CudaHeadOps, ScaleForwardBackwardAndInPlace,
                     Op::head_scale_fwd, Op::head_scale_bwd) {
  for (const Shape& sh : kShapes) {
    const std::string at = " (H " + std::to_string(sh.heads) + ", dh " + std::to_string(sh.dh) + ")";
    const int w = sh.heads * sh.dh;
    Pair x_w = input(sh.n, w + 4, 40 + sh.dh, -2, 2);
    const Pair x = cols(x_w, 4, 4 + w);
    Pair s = input(sh.n, sh.heads, 41 + sh.dh, 0, 1);
    Pair y = output(sh.n, w);
    cpu().head_scale_fwd(x.ref, s.ref, sh.dh, y.ref);
    dev().head_scale_fwd(x.dev, s.dev, sh.dh, y.dev);
    expect_close("head_scale_fwd" + at, y, tol({1e-7, 1e-6}, {1e-6, 4e-3}));

    Pair dy = input(sh.n, w, 42 + sh.dh);
    Pair dx = output(sh.n, w), ds = output(sh.n, sh.heads);
    same_start(ds, random_vector(std::size_t(sh.n) * sh.heads, 43));  // written, not added to
    cpu().head_scale_bwd(x.ref, s.ref, dy.ref, sh.dh, dx.ref, ds.ref);
    dev().head_scale_bwd(x.dev, s.dev, dy.dev, sh.dh, dx.dev, ds.dev);
    expect_close("head_scale_bwd dx" + at, dx, tol({1e-7, 1e-6}, {1e-6, 4e-3}));
    // ds: a dot product over dh in fp32; bf16 rounds the result.
    expect_close("head_scale_bwd ds" + at, ds, tol({1e-6, 1e-5}, {1e-3, 4e-3}));

    // In place: y = x, dx = dy; and the same bits twice.
    cpu().head_scale_fwd(x.ref, s.ref, sh.dh, x.ref);
    dev().head_scale_fwd(x.dev, s.dev, sh.dh, x.dev);
    expect_close("head_scale_fwd in place" + at, x_w, tol({1e-7, 1e-6}, {1e-6, 4e-3}));
    Pair ds2 = output(sh.n, sh.heads);
    dev().head_scale_bwd(x.dev, s.dev, dy.dev, sh.dh, dx.dev, ds.dev);
    dev().head_scale_bwd(x.dev, s.dev, dy.dev, sh.dh, dy.dev, ds2.dev);
    EXPECT_EQ(read(dev(), dy.dev), read(dev(), dx.dev)) << "head_scale_bwd in place" << at;
    EXPECT_EQ(read(dev(), ds.dev), read(dev(), ds2.dev)) << "head_scale_bwd ds" << at;
  }
}

TEST_P(CudaHeadOps, BadShapesAreRefused) {
  Backend& be = dev();
  const Tensor x = be.alloc(dtype(), 4, 12);
  EXPECT_THROW(be.head_mean_fwd(x, 5, be.alloc(dtype(), 4, 5)), Error);
  EXPECT_THROW(be.head_mean_fwd(x, 4, be.alloc(dtype(), 4, 3)), Error);
  EXPECT_THROW(be.head_scale_fwd(x, be.alloc(dtype(), 4, 2), 4, x), Error);
  EXPECT_THROW(be.head_scale_bwd(x, be.alloc(dtype(), 4, 3), x, 4, x, be.alloc(dtype(), 4, 4)),
               Error);
}

WIOLA_DEVICE_OP_SUITE(CudaHeadOps);

}  // namespace
}  // namespace wiola::test
