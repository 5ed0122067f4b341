#pragma once
// ATM row maps: cosine similarity of neighbouring rows (the merge decision),
// and merging/unmerging rows by index pairs (the linear part, with gradient).
#include <cmath>
#include <cstdint>

#include "ops/buckets.hpp"
#include "ops/parallel.hpp"

namespace wiola::ops {

// rho[b,t] = cos(x[b,t], x[b,t+1]) for t < seq−1 (0 when either row is zero),
// rho[b,seq−1] = −2. Computed in double; R is rho's element type.
template <class T, class R>
void row_cosine_next(std::int64_t batch, std::int64_t seq, std::int64_t d, const T* x,
                     std::int64_t ldx, R* rho, std::int64_t ldr) {
  for_each_row(batch * seq, d, [&](std::int64_t i) {
    if (i % seq == seq - 1) {
      rho[i * ldr] = R(-2);
      return;
    }
    const T* a = x + i * ldx;
    const T* b = a + ldx;
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (std::int64_t c = 0; c < d; ++c) {
      const double av = a[c], bv = b[c];
      ab += av * bv;
      aa += av * av;
      bb += bv * bv;
    }
    rho[i * ldr] = (aa == 0.0 || bb == 0.0) ? R(0) : static_cast<R>(ab / std::sqrt(aa * bb));
  });
}

// dst[r] = mean of src rows {ia[r], ib[r]} leaving out −1; ia[r] = −1 gives a
// zero row. Indices are absolute rows of src and already validated.
template <class T>
void merge_rows_fwd(std::int64_t rows, std::int64_t d, const T* src, std::int64_t lds,
                    const std::int32_t* ia, std::int64_t lda, const std::int32_t* ib,
                    std::int64_t ldb, T* dst, std::int64_t ldd) {
  for_each_row(rows, d, [&](std::int64_t r) {
    const std::int64_t a = ia[r * lda], b = ib[r * ldb];
    T* out = dst + r * ldd;
    if (a < 0) {
      for (std::int64_t c = 0; c < d; ++c) out[c] = T(0);
    } else if (b < 0) {
      const T* sa = src + a * lds;
      for (std::int64_t c = 0; c < d; ++c) out[c] = sa[c];
    } else {
      const T* sa = src + a * lds;
      const T* sb = src + b * lds;
      for (std::int64_t c = 0; c < d; ++c) out[c] = (sa[c] + sb[c]) * T(0.5);
    }
  });
}

// dsrc[idx] += ddst[r] / count(r), the adjoint of merge_rows_fwd. Several dst
// rows can feed one src row (an unmerge copies a row to both members), so the
// contributions are grouped by src row and added in ascending (r, slot) order.
template <class T>
void merge_rows_bwd(std::int64_t rows, std::int64_t d, std::int64_t src_rows, const T* ddst,
                    std::int64_t ldd, const std::int32_t* ia, std::int64_t lda,
                    const std::int32_t* ib, std::int64_t ldb, T* dsrc, std::int64_t lds) {
  // Item 2r is (row r, first index), item 2r+1 is (row r, second index).
  auto source_of = [&](std::int64_t item) -> std::int64_t {
    const std::int64_t r = item / 2;
    const std::int64_t a = ia[r * lda];
    if (a < 0) return -1;
    return item % 2 == 0 ? a : static_cast<std::int64_t>(ib[r * ldb]);
  };
  const Buckets from = bucket_by_key(src_rows, 2 * rows, source_of);
#pragma omp parallel for schedule(dynamic, 16) if (rows * d >= kMinParallelWork)
  for (std::int64_t s = 0; s < src_rows; ++s) {
    T* out = dsrc + s * lds;
    for (std::int64_t k = from.start[static_cast<std::size_t>(s)];
         k < from.start[static_cast<std::size_t>(s + 1)]; ++k) {
      const std::int64_t r = from.items[static_cast<std::size_t>(k)] / 2;
      const T w = ib[r * ldb] < 0 ? T(1) : T(0.5);
      const T* in = ddst + r * ldd;
      for (std::int64_t c = 0; c < d; ++c) out[c] += w * in[c];
    }
  }
}

}  // namespace wiola::ops
