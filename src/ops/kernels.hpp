#pragma once
// The vectorised CPU kernels, built once per instruction set (SSE4.2 of
// x86-64-v2, the baseline every build runs on; AVX2; AVX-512) from the same
// source (kernels_impl.hpp over simd.hpp) and chosen once at start: the
// widest the CPU has, or the one WIOLA_CPU_KERNELS names (sse | avx2 |
// avx512). All of them give the same bits (simd.hpp says why), so the choice
// changes the speed only.
//
// The op headers (activations.hpp, attention.hpp, ...) call them through
// kernel_set<T>(); their contracts are those headers'.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ops/attention_args.hpp"

namespace wiola::ops {

// The most context summaries one attention call may have (Λ is 2 by default).
inline constexpr std::size_t kMaxAttentionContexts = 64;

struct AdamWStep {
  double lr, beta1, beta2, eps, weight_decay, grad_scale;
  long step;  // 1-based
};

// name, parameter list (T is the element type).
#define WIOLA_CPU_KERNELS(X)                                                                    \
  X(sigmoid_mul_fwd, (std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* x, \
                      std::int64_t ldx, T* y, std::int64_t ldy))                                \
  X(sigmoid_mul_bwd, (std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* x, \
                      std::int64_t ldx, const T* dy, std::int64_t lddy, T* dg, std::int64_t lddg, \
                      T* dx, std::int64_t lddx))                                                \
  X(silu_mul_fwd, (std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* u,    \
                   std::int64_t ldu, T* y, std::int64_t ldy))                                   \
  X(silu_mul_bwd, (std::int64_t n, std::int64_t c, const T* g, std::int64_t ldg, const T* u,    \
                   std::int64_t ldu, const T* dy, std::int64_t lddy, T* dg, std::int64_t lddg,  \
                   T* du, std::int64_t lddu))                                                   \
  X(gelu_fwd, (std::int64_t n, std::int64_t c, const T* x, std::int64_t ldx, T* y,              \
               std::int64_t ldy))                                                               \
  X(gelu_bwd, (std::int64_t n, std::int64_t c, const T* x, std::int64_t ldx, const T* dy,       \
               std::int64_t lddy, T* dx, std::int64_t lddx))                                    \
  X(fusion_fwd, (std::int64_t n, std::int64_t c, const T* logits, std::int64_t ldl, const T* a, \
                 std::int64_t lda, const T* b, std::int64_t ldb, T* out, std::int64_t ldo))     \
  X(fusion_bwd, (std::int64_t n, std::int64_t c, const T* logits, std::int64_t ldl, const T* a, \
                 std::int64_t lda, const T* b, std::int64_t ldb, const T* dout,                 \
                 std::int64_t lddo, T* dlogits, std::int64_t lddl, T* da, std::int64_t ldda,    \
                 T* db, std::int64_t lddb))                                                     \
  X(cross_entropy_fwd, (std::int64_t n, std::int64_t vocab, const T* logits, std::int64_t ldl,  \
                        const std::int32_t* tgt, std::int64_t ldt, T* loss, std::int64_t ldloss, \
                        T* lse, std::int64_t ldlse))                                            \
  X(cross_entropy_bwd, (std::int64_t n, std::int64_t vocab, const T* logits, std::int64_t ldl,  \
                        const std::int32_t* tgt, std::int64_t ldt, const T* lse,                \
                        std::int64_t ldlse, T scale, T* dlogits, std::int64_t lddl))            \
  X(wrmsnorm_fwd, (std::int64_t n, std::int64_t d, const T* x, std::int64_t ldx,                \
                   const T* gamma, const T* delta, double eps, T* y, std::int64_t ldy, T* rstd, \
                   std::int64_t ldr))                                                           \
  X(wrmsnorm_bwd, (std::int64_t n, std::int64_t d, const T* x, std::int64_t ldx,                \
                   const T* gamma, const T* delta, const T* rstd, std::int64_t ldr,             \
                   const T* dy, std::int64_t lddy, T* dx, std::int64_t lddx, bool accumulate,   \
                   T* dgamma, T* ddelta))                                                       \
  X(adamw_step, (const AdamWStep& h, std::int64_t rows, std::int64_t cols, T* param,            \
                 std::int64_t ldp, const T* grad, std::int64_t ldg, T* m, std::int64_t ldm,     \
                 T* v, std::int64_t ldv))                                                       \
  X(attention_fwd, (const AttentionArgs<T>& a, const AttentionOutputs<T>& out))                 \
  X(attention_bwd, (const AttentionArgs<T>& a, const AttentionSaved<T>& saved,                  \
                    const AttentionGrads<T>& grads, double* dbeta))

template <class T>
struct KernelSet {
#define WIOLA_KERNEL_POINTER(name, params) void(*name) params = nullptr;
  WIOLA_CPU_KERNELS(WIOLA_KERNEL_POINTER)
#undef WIOLA_KERNEL_POINTER
};

struct Kernels {
  const char* isa = "";
  KernelSet<float> f32;
  KernelSet<double> f64;
};

// Every instruction set this build has kernels for and this CPU runs, the
// baseline first.
std::vector<const Kernels*> available_kernels();
// The kernels in use: chosen at the first call (WIOLA_CPU_KERNELS, else the
// widest available); use_kernels switches (tests compare the sets).
const Kernels& kernels();
void use_kernels(const Kernels& k);

template <class T>
const KernelSet<T>& kernel_set() {
  if constexpr (sizeof(T) == sizeof(float))
    return kernels().f32;
  else
    return kernels().f64;
}

// The tables of the ISA files (nullptr where the build has none).
const Kernels* kernels_sse();
const Kernels* kernels_avx2();
const Kernels* kernels_avx512();

}  // namespace wiola::ops
