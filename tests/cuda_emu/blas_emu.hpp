#pragma once
// The emulated cuBLASLt's algorithms (blas_emu.cpp). As in cuBLASLt, the
// heuristic chooses an algorithm for the operand alignment the wrapper
// states (gemm_key.hpp), and that algorithm assumes it: run on an operand
// less aligned than that, it fails, naming the operand and both alignments,
// where the real library would fail or read out of bounds.
#include <cstdint>

#include "backend/cuda/gemm_key.hpp"

namespace wiola::cuda {

struct EmulatedAlgo {
  std::int64_t align_a = kOperandAlignBytes, align_b = kOperandAlignBytes,
               align_c = kOperandAlignBytes;  // bytes each operand's start is assumed aligned to
};

EmulatedAlgo emulated_heuristic(const GemmKey& key);
// Throws wiola::Error when an operand is less aligned than `algo` assumes.
void check_operand_alignment(const EmulatedAlgo& algo, const void* a, const void* b,
                             const void* c);

}  // namespace wiola::cuda
