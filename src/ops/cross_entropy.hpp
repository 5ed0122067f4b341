#pragma once
// Per-row cross-entropy with its log-sum-exp. The max is subtracted before
// exponentiating and the sum of exponentials is kept in double, so fp32
// logits of any magnitude neither overflow nor lose the small terms.
#include <cmath>
#include <cstdint>

#include "ops/parallel.hpp"

namespace wiola::ops {

// loss[i] = lse_i − logits[i, tgt[i]] (0 when tgt[i] = −1); lse[i] for every row.
template <class T>
void cross_entropy_fwd(std::int64_t n, std::int64_t vocab, const T* logits, std::int64_t ldl,
                       const std::int32_t* tgt, std::int64_t ldt, T* loss, std::int64_t ldloss,
                       T* lse, std::int64_t ldlse) {
  for_each_row(n, vocab, [&](std::int64_t i) {
    const T* z = logits + i * ldl;
    T m = z[0];
    for (std::int64_t j = 1; j < vocab; ++j) m = z[j] > m ? z[j] : m;
    double sum = 0.0;
    for (std::int64_t j = 0; j < vocab; ++j) sum += static_cast<double>(std::exp(z[j] - m));
    const double l = static_cast<double>(m) + std::log(sum);
    const std::int32_t t = tgt[i * ldt];
    lse[i * ldlse] = static_cast<T>(l);
    loss[i * ldloss] = t < 0 ? T(0) : static_cast<T>(l - static_cast<double>(z[t]));
  });
}

// dlogits = scale · (softmax − onehot(target)); zero rows for ignored targets.
// dlogits may be logits: each element is read before it is written.
template <class T>
void cross_entropy_bwd(std::int64_t n, std::int64_t vocab, const T* logits, std::int64_t ldl,
                       const std::int32_t* tgt, std::int64_t ldt, const T* lse,
                       std::int64_t ldlse, T scale, T* dlogits, std::int64_t lddl) {
  for_each_row(n, vocab, [&](std::int64_t i) {
    const T* z = logits + i * ldl;
    T* dz = dlogits + i * lddl;
    const std::int32_t t = tgt[i * ldt];
    if (t < 0) {
      for (std::int64_t j = 0; j < vocab; ++j) dz[j] = T(0);
      return;
    }
    const T l = lse[i * ldlse];
    for (std::int64_t j = 0; j < vocab; ++j) dz[j] = scale * std::exp(z[j] - l);
    dz[t] -= scale;
  });
}

}  // namespace wiola::ops
