// The products of a training step on the views a real stage hands them:
// weights at the offsets ParamLayout gives them in one flat parameter buffer
// (the fused [k; v] included) and their fp32 gradients in the flat gradient
// buffer, on random data, against the CPU in fp64. Each such view starts
// 256-byte aligned on the device, as cuBLASLt assumes by default. A view at an
// odd bf16 offset never comes out of a layout now (tests/model/test_alignment.cpp),
// but the wrapper must still state its real alignment: the emulation refuses
// a product whose algorithm assumes more (tests/cuda_emu/blas_emu.hpp), which
// is how the odd offsets the layout used to produce would have been caught.
#include <string>

#include "core/alignment.hpp"
#include "core/param_layout.hpp"
#include "device_compare.hpp"

namespace wiola::test {
namespace {

class CudaLayoutViewOps : public DeviceOpTest {
 protected:
  // Rows [0, rows) of the matrix that starts at element `offset` of a flat
  // buffer, `cols` wide, on both backends.
  static Pair view(const Pair& flat, std::int64_t offset, std::int64_t rows, std::int64_t cols) {
    return {flat.ref.range(offset, rows * cols).reshape(rows, cols),
            flat.dev.range(offset, rows * cols).reshape(rows, cols), {}};
  }

  // y = x Wᵀ, dx = dy W and dW += dyᵀ x for W at `offset` (rows x cols) of
  // the flat parameters, dW at the same offset of the flat fp32 gradients.
  void products(const std::string& what, const Pair& params, const Pair& grads,
                std::int64_t offset, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
    const int n = 24;
    const Pair w = view(params, offset, rows, cols), dw = view(grads, offset, rows, cols);
    const Tolerance t = tol({1e-5, 1e-5}, {2e-2, 8e-3});
    Pair x = input(n, cols, seed), dy = input(n, rows, seed + 1);
    Pair y = output(n, rows), dx = output(n, cols);
    cpu().linear_fwd(x.ref, w.ref, y.ref, false);
    dev().linear_fwd(x.dev, w.dev, y.dev, false);
    expect_close(what + ": linear_fwd", y, t);
    cpu().linear_bwd_data(dy.ref, w.ref, dx.ref, false);
    dev().linear_bwd_data(dy.dev, w.dev, dx.dev, false);
    expect_close(what + ": linear_bwd_data", dx, t);
    cpu().linear_bwd_weight(dy.ref, x.ref, dw.ref);
    dev().linear_bwd_weight(dy.dev, x.dev, dw.dev);
    expect_close(what + ": linear_bwd_weight (fp32, added to)", dw, {1e-5, 1e-5});
  }
};

TEST_P(CudaLayoutViewOps, ProductsOnParameterAndGradientViewsAtTheLayoutsOffsets) {
  for (const char* name : {"wiola-mini", "wiola13m-tiny"}) {
    SCOPED_TRACE(name);
    const ModelConfig c = preset(name);
    // The last stage of a two-stage split: layers and the tied head.
    const ParamLayout layout(c, StageSpec{c.L / 2, c.L, false, true});
    const Pair params = input(1, layout.total(), 41);
    const Pair grads = input_as(DType::F32, 1, layout.total(),
                                random_vector(std::size_t(layout.total()), 42));
    std::uint64_t seed = 43;
    for (const ParamSpec& p : layout.entries()) {
      if (p.rows == 1) continue;  // vectors reach no GEMM
      // A stacked entry's predecessor is run as the fused matrix [it; this one].
      const bool fused_head = !p.stacked && &p != &layout.entries().back() &&
                              (&p + 1)->stacked;
      const std::int64_t rows = fused_head ? p.rows + (&p + 1)->rows : p.rows;
      const std::string what = fused_head ? p.name + " (fused with the next)" : p.name;
      EXPECT_EQ(address_alignment(view(params, p.offset, rows, p.cols).dev.data()),
                kOperandAlignBytes) << what;
      EXPECT_EQ(address_alignment(view(grads, p.offset, rows, p.cols).dev.data()),
                kOperandAlignBytes) << what << " (gradient)";
      products(what, params, grads, p.offset, rows, p.cols, seed += 2);
    }
  }
}

TEST_P(CudaLayoutViewOps, AnOddOffsetViewAfterAnAlignedOneOfTheSameShape) {
  // The same product twice: first on an aligned weight, then on one starting
  // one element later (2 bytes in bf16, 4 in fp32), as ffn.* sat behind the
  // one-element ctx_logit before the layout was padded. The second must get an
  // algorithm of its own that assumes no more than its real alignment.
  const std::int64_t rows = 40, cols = 64;
  const Pair params = input(1, 2 * kAlignElements + rows * cols, 51);
  const Pair grads = input_as(DType::F32, 1, 2 * kAlignElements + rows * cols,
                              random_vector(std::size_t(2 * kAlignElements + rows * cols), 52));
  products("aligned weight", params, grads, kAlignElements, rows, cols, 53);
  const Pair odd = view(params, kAlignElements + 1, rows, cols);
  EXPECT_LT(address_alignment(odd.dev.data()), kOperandAlignBytes);
  products("weight at an odd offset", params, grads, kAlignElements + 1, rows, cols, 53);
}

WIOLA_DEVICE_OP_SUITE(CudaLayoutViewOps);

}  // namespace
}  // namespace wiola::test
