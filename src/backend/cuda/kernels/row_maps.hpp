#pragma once
// ATM row maps on the device: the cosine of neighbouring rows (fp32, the merge
// decision's statistic), and merging rows by index pairs with its adjoint.
#include "backend/cuda/runtime.hpp"
#include "core/tensor.hpp"

namespace wiola::cuda::kernels {

// rho (fp32) [B·T, 1]: cos(x[b,t], x[b,t+1]) for t < T−1 (0 when either row
// is zero), −2 at t = T−1; sums in fp32.
void row_cosine_next(const Tensor& x, int batch, int seq, const Tensor& rho, Stream s);
// dst[r] = mean of src rows {idx_a[r], idx_b[r]} leaving out −1; idx_a[r] = −1
// gives a zero row (an index >= src rows gives NaN).
void merge_rows_fwd(const Tensor& src, const Tensor& idx_a, const Tensor& idx_b,
                    const Tensor& dst, Stream s);
// dsrc[idx] += ddst[r] / count(r): owner computes (scatter.cuh), so a source
// row fed by several destination rows adds them in ascending (r, slot) order
// in fp32, with no atomics; bit-for-bit reproducible.
void merge_rows_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                    const Tensor& dsrc, Stream s);
// The same adjoint written whole for a causal ATM plan's maps (Backend::
// causal_merge_bwd): a warp per source row finds its group's row and its
// unmerged copy's by binary search and writes w·ddst[group] + ddst[copy] in
// fp32 (the scatter's order, no atomics).
void causal_merge_bwd(const Tensor& ddst, const Tensor& idx_a, const Tensor& idx_b,
                      const Tensor& groups, int batch, int seq, const Tensor& dsrc, Stream s);

}  // namespace wiola::cuda::kernels
