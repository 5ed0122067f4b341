// Embedding gather (one thread per element, rows and columns from a 2D grid)
// and scatter-add (owner computes,
// scatter.cuh: each dtable element has one owning thread that adds the rows
// of its token in ascending token order, so no atomics and the same bits on
// every run).
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/embedding.hpp"
#include "backend/cuda/kernels/scatter.cuh"

namespace wiola::cuda::kernels {

namespace {

template <class T>
__global__ void embedding_gather(std::int64_t n, std::int64_t d, std::int64_t vocab,
                                 const std::int32_t* tok, const T* table, std::int64_t ldt,
                                 T* out, std::int64_t ldo) {
  for (std::int64_t r = blockIdx.y * std::int64_t(blockDim.y) + threadIdx.y; r < n;
       r += std::int64_t(gridDim.y) * blockDim.y) {
    const std::int64_t v = tok[r];
    const bool known = v >= 0 && v < vocab;
    for (std::int64_t c = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; c < d;
         c += std::int64_t(gridDim.x) * blockDim.x)
      out[r * ldo + c] = known ? table[v * ldt + c] : from_float<T>(NAN);
  }
}

// Item i: token i adds its dout row into table row tokens[i].
struct TokenRows {
  const std::int32_t* tok;
  __device__ int key(std::int64_t i) const { return tok[i]; }
  __device__ std::int64_t source(std::int64_t i) const { return i; }
  __device__ float weight(std::int64_t) const { return 1.0f; }
};

template <class T>
void launch_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable, Stream s) {
  const ScatterPlan p = plan_scatter(dtable.rows(), dtable.cols());
  if (p.warps == 0 || tokens.rows() == 0) return;
  WIOLA_LAUNCH((owner_scatter_add<T, float, TokenRows>), dim3(p.blocks), dim3(kScatterWarps * 32),
               0, static_cast<cudaStream_t>(s))(
      tokens.rows(), dtable.cols(), dtable.rows(), p.partitions, p.warps,
      TokenRows{static_cast<const std::int32_t*>(tokens.data())},
      static_cast<const T*>(dout.data()), dout.ld(), static_cast<float*>(dtable.data()),
      dtable.ld());
  WIOLA_CHECK_LAUNCH("owner_scatter_add (embedding)",
                     scatter_bytes(tokens.rows(), dtable.rows(), dtable.cols(), sizeof(T),
                                   sizeof(float), 4));
}

}  // namespace

void embedding_fwd(const Tensor& tokens, const Tensor& table, const Tensor& out, Stream s) {
  if (out.numel() == 0) return;
  auto launch = [&](auto zero) {
    using T = decltype(zero);
    const Grid2D g = grid_2d(out.rows(), out.cols());
    WIOLA_LAUNCH(embedding_gather<T>, g.grid, g.block, 0, static_cast<cudaStream_t>(s))(
        out.rows(), out.cols(), table.rows(), static_cast<const std::int32_t*>(tokens.data()),
        static_cast<const T*>(table.data()), table.ld(), static_cast<T*>(out.data()), out.ld());
  };
  with_compute_type(table.dtype(), launch);
  // Each token's id and table row read, its output row written.
  WIOLA_CHECK_LAUNCH("embedding_gather", bytes_of(tokens) + 2 * bytes_of(out));
}

void embedding_bwd(const Tensor& tokens, const Tensor& dout, const Tensor& dtable, Stream s) {
  if (dout.dtype() == DType::BF16)
    launch_bwd<__nv_bfloat16>(tokens, dout, dtable, s);
  else
    launch_bwd<float>(tokens, dout, dtable, s);
}

}  // namespace wiola::cuda::kernels
