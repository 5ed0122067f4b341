#pragma once
// What kernel source needs from CUDA, from the toolkit under nvcc or from the
// test tree's emulation of the execution model when the same source is
// compiled by the host compiler for CI. Kernel files include this header and
// nothing else of CUDA, and launch kernels only through WIOLA_LAUNCH, so that
// both builds compile the same text. The emulated build (WIOLA_CUDA_EMULATION)
// includes the emulation's header before each kernel file: this one, in the
// source tree, names nothing of the test tree.
#if defined(WIOLA_CUDA_EMULATION)
#if !defined(WIOLA_CUDA_EMU_PROVIDED)
#error "the emulated CUDA build includes the emulation's header before any kernel source"
#endif
// kernel<<<grid, block, shared_bytes, stream>>>(args...)
#define WIOLA_LAUNCH(kernel, grid, block, shared_bytes, stream) \
  ((void)(stream), ::wiola::emu::make_launch(#kernel, kernel, grid, block, shared_bytes))
#define WIOLA_DYNAMIC_SHARED(type, name) \
  type* name = reinterpret_cast<type*>(::wiola::emu::dynamic_shared())
// Unroll the next loop (so small per-thread arrays stay in registers); the
// host compiler decides for itself.
#define WIOLA_UNROLL
// Bytes a block stages in shared memory for its tensor-core products: the
// emulation adds them up (tools/gpu-counts.sh: shared-memory bytes per MMA
// FLOP); a GPU build counts nothing.
#define WIOLA_COUNT_SHARED_STAGING(bytes) ::wiola::emu::count_shared_staging(bytes)
#else
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#define WIOLA_LAUNCH(kernel, grid, block, shared_bytes, stream) \
  kernel<<<grid, block, shared_bytes, stream>>>
// 128-byte aligned: kernels carve it into sections for ldmatrix rows and
// cp.async copies (16-byte aligned) and 16-byte vector accesses.
#define WIOLA_DYNAMIC_SHARED(type, name)                     \
  extern __shared__ __align__(128) unsigned char wiola_smem[]; \
  type* name = reinterpret_cast<type*>(wiola_smem)
#define WIOLA_UNROLL _Pragma("unroll")
#define WIOLA_COUNT_SHARED_STAGING(bytes) ((void)0)
#endif
