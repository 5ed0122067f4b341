#pragma once
// The raw arguments of the GCLA attention kernels (attention.hpp,
// kernels_impl.hpp): views of the inputs, the forward's outputs, what the
// backward reads, and the gradients it writes.
#include <cstdint>
#include <vector>

namespace wiola::ops {

// Raw views of the inputs shared by forward and backward. Index arrays are
// I32 columns with a row stride; key rows are 0-based inside a sequence block.
template <class T>
struct AttentionArgs {
  std::int64_t batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
  const T* q = nullptr;
  std::int64_t ldq = 0;
  const T* k = nullptr;
  std::int64_t ldk = 0;
  const T* v = nullptr;
  std::int64_t ldv = 0;
  std::vector<const T*> ctx_k, ctx_v;  // one per summary, oldest first
  std::vector<std::int64_t> ld_ctx_k, ld_ctx_v;
  T beta = 0;  // σ(φ)
  const std::int32_t* n_queries = nullptr;
  std::int64_t ld_nq = 1;
  const std::int32_t* key_prefix = nullptr;
  std::int64_t ld_kp = 1;
  const std::int32_t* key_extra = nullptr;
  std::int64_t ld_ke = 1;
  const std::int32_t* ctx_row = nullptr;
  std::int64_t ld_cr = 1;
};

template <class T>
struct AttentionOutputs {
  T* o = nullptr;
  std::int64_t ldo = 0;
  T* o_self = nullptr;
  std::int64_t ldos = 0;
  T* o_ctx = nullptr;
  std::int64_t ldoc = 0;
  T* lse_self = nullptr;
  std::int64_t ldls = 0;
  T* lse_ctx = nullptr;
  std::int64_t ldlc = 0;
};

// What backward reads besides the inputs (saved by forward, and dO).
template <class T>
struct AttentionSaved {
  const T* o_self = nullptr;
  std::int64_t ldos = 0;
  const T* o_ctx = nullptr;
  std::int64_t ldoc = 0;
  const T* lse_self = nullptr;
  std::int64_t ldls = 0;
  const T* lse_ctx = nullptr;
  std::int64_t ldlc = 0;
  const T* d_o = nullptr;
  std::int64_t lddo = 0;
};

template <class T>
struct AttentionGrads {
  T* dq = nullptr;
  std::int64_t lddq = 0;
  T* dk = nullptr;
  std::int64_t lddk = 0;
  T* dv = nullptr;
  std::int64_t lddv = 0;
  std::vector<T*> dctx_k, dctx_v;
  std::vector<std::int64_t> ld_dctx_k, ld_dctx_v;
  std::vector<std::int64_t> ctx_rows;  // rows of every context tensor
  // Scratch of batch·seq·heads·n_ctx elements each, written by the kernel:
  // the factors of each query's context-row gradients (attention.hpp
  // scatters them by context row).
  T* coef_k = nullptr;
  T* coef_v = nullptr;
};

}  // namespace wiola::ops
