#pragma once
// Per-row cross-entropy with its log-sum-exp. The max is subtracted before
// exponentiating and the sum of exponentials is kept in double, so fp32
// logits of any magnitude neither overflow nor lose the small terms
// (vectorised in kernels_impl.hpp).
#include <cstdint>

#include "ops/kernels.hpp"

namespace wiola::ops {

// loss[i] = lse_i − logits[i, tgt[i]] (0 when tgt[i] = −1); lse[i] for every row.
template <class T>
void cross_entropy_fwd(std::int64_t n, std::int64_t vocab, const T* logits, std::int64_t ldl,
                       const std::int32_t* tgt, std::int64_t ldt, T* loss, std::int64_t ldloss,
                       T* lse, std::int64_t ldlse) {
  kernel_set<T>().cross_entropy_fwd(n, vocab, logits, ldl, tgt, ldt, loss, ldloss, lse, ldlse);
}

// dlogits = scale · (softmax − onehot(target)); zero rows for ignored targets.
// dlogits may be logits: each element is read before it is written.
template <class T>
void cross_entropy_bwd(std::int64_t n, std::int64_t vocab, const T* logits, std::int64_t ldl,
                       const std::int32_t* tgt, std::int64_t ldt, const T* lse,
                       std::int64_t ldlse, T scale, T* dlogits, std::int64_t lddl) {
  kernel_set<T>().cross_entropy_bwd(n, vocab, logits, ldl, tgt, ldt, lse, ldlse, scale, dlogits,
                                    lddl);
}

}  // namespace wiola::ops
