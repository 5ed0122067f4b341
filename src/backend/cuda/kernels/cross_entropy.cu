// Cross-entropy: one block per row. Forward: each thread keeps a running
// (max m, Σ exp(z − m)) over its columns j = threadIdx.x + k·blockDim.x,
// rescaling the sum when the max grows; the block then takes the max of the
// maxima and adds the rescaled sums (block_max, block_sum: fixed order).
// Backward: one pass writing scale·(softmax − onehot) element by element,
// each element read before the same thread writes it (so in place works);
// the gradient may be stored in another type than the logits (fp32 logits,
// bf16 gradient: the head's loss in blocks of rows).
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/cross_entropy.hpp"

namespace wiola::cuda::kernels {

namespace {

template <class T>
__global__ void ce_fwd_kernel(std::int64_t vocab, const T* logits, std::int64_t ldl,
                              const std::int32_t* tgt, float* loss, std::int64_t ldloss,
                              float* lse, std::int64_t ldlse) {
  __shared__ float scratch[32];
  const std::int64_t i = blockIdx.x;
  const T* z = logits + i * ldl;
  float m = -INFINITY, sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
    const float v = to_float(z[j]);
    if (v > m) {  // a new max: rescale what was summed so far
      sum = sum * expf(m - v) + 1.0f;
      m = v;
    } else if (v == v) {
      if (v != -INFINITY) sum += expf(v - m);  // exp(−inf) adds nothing
    } else {
      sum = v;  // NaN poisons the row
    }
  }
  const float row_max = block_max(m, scratch);
  // A thread with nothing summed (sum = 0, maybe m = −inf) adds 0 rather than 0·exp(NaN).
  const float part = sum == 0.0f ? 0.0f : sum * expf(m - row_max);
  const float total = block_sum(part, scratch);
  if (threadIdx.x != 0) return;
  const float l = row_max + logf(total);
  const std::int64_t t = tgt[i];
  lse[i * ldlse] = l;
  loss[i * ldloss] = t < 0 ? 0.0f : (t < vocab ? l - to_float(z[t]) : NAN);
}

template <class T, class TD>
__global__ void ce_bwd_kernel(std::int64_t vocab, const T* logits, std::int64_t ldl,
                              const std::int32_t* tgt, const float* lse, std::int64_t ldlse,
                              float scale, TD* dlogits, std::int64_t lddl) {
  const std::int64_t i = blockIdx.x;
  const std::int64_t t = tgt[i];
  const float l = lse[i * ldlse];
  const T* z = logits + i * ldl;
  TD* dz = dlogits + i * lddl;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
    float g = 0.0f;
    if (t >= 0) g = scale * (expf(to_float(z[j]) - l) - (j == t ? 1.0f : 0.0f));
    dz[j] = from_float<TD>(g);
  }
}

}  // namespace

void cross_entropy_fwd(const Tensor& logits, const Tensor& targets, const Tensor& loss,
                       const Tensor& lse, Stream s) {
  if (logits.rows() == 0) return;
  auto launch = [&](auto zero) {
    using T = decltype(zero);
    WIOLA_LAUNCH(ce_fwd_kernel<T>, dim3(static_cast<unsigned>(logits.rows())), dim3(kThreads), 0,
                 static_cast<cudaStream_t>(s))(
        logits.cols(), static_cast<const T*>(logits.data()), logits.ld(),
        static_cast<const std::int32_t*>(targets.data()), static_cast<float*>(loss.data()),
        loss.ld(), static_cast<float*>(lse.data()), lse.ld());
  };
  with_compute_type(logits.dtype(), launch);
  // One pass over the logits (the target's logit read again: a row's one
  // element); per row its target read, its loss and lse written.
  WIOLA_CHECK_LAUNCH("ce_fwd_kernel", bytes_of(logits) + logits.rows() * (4 + 4 + 4 + 4));
}

void cross_entropy_bwd(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                       double scale, const Tensor& dlogits, Stream s) {
  if (logits.rows() == 0 || logits.cols() == 0) return;
  auto launch = [&](auto zero, auto zero_d) {
    using T = decltype(zero);
    using TD = decltype(zero_d);
    WIOLA_LAUNCH((ce_bwd_kernel<T, TD>), dim3(static_cast<unsigned>(logits.rows())),
                 dim3(kThreads), 0, static_cast<cudaStream_t>(s))(
        logits.cols(), static_cast<const T*>(logits.data()), logits.ld(),
        static_cast<const std::int32_t*>(targets.data()), static_cast<const float*>(lse.data()),
        lse.ld(), static_cast<float>(scale), static_cast<TD*>(dlogits.data()), dlogits.ld());
  };
  with_compute_type(logits.dtype(), [&](auto zero) {
    with_compute_type(dlogits.dtype(), [&](auto zero_d) { launch(zero, zero_d); });
  });
  WIOLA_CHECK_LAUNCH("ce_bwd_kernel",
                     bytes_of(logits) + bytes_of(dlogits) + logits.rows() * (4 + 4));
}

}  // namespace wiola::cuda::kernels
