// The emulated cuBLASLt keeps the real library's contract on alignment: an
// algorithm chosen for operands of some alignment refuses less-aligned ones,
// naming the operand and both alignments (tests/cuda_emu/blas_emu.hpp).
#include <gtest/gtest.h>

#include <string>

#include "blas_emu.hpp"
#include "core/error.hpp"

namespace wiola::cuda {
namespace {

TEST(EmulatedBlas, AnAlgorithmRefusesOperandsLessAlignedThanItWasChosenFor) {
  alignas(kOperandAlignBytes) static float a[4096], b[4096], c[4096];
  const MatrixView va{a, DType::F32, 64}, vb{b, DType::F32, 64};
  const EmulatedAlgo aligned =
      emulated_heuristic(gemm_key(false, true, 16, 16, 64, va, vb, c, DType::F32, 16));
  EXPECT_EQ(aligned.align_a, 256);
  EXPECT_NO_THROW(check_operand_alignment(aligned, a, b, c));
  for (int which = 0; which < 3; ++which) {
    const void* p[3] = {a, b, c};
    p[which] = reinterpret_cast<const char*>(p[which]) + 4;  // one fp32 element later
    try {
      check_operand_alignment(aligned, p[0], p[1], p[2]);
      ADD_FAILURE() << "operand " << which << " 4-byte aligned was accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(which == 0 ? "operand A " : which == 1 ? "operand B " : "operand C/D "),
                std::string::npos) << msg;
      EXPECT_NE(msg.find("is 4-byte aligned"), std::string::npos) << msg;
      EXPECT_NE(msg.find("chosen for 256-byte"), std::string::npos) << msg;
    }
  }
  // Chosen for the 4-byte aligned operand it states, an algorithm takes it.
  const MatrixView odd{a + 1, DType::F32, 64};
  const EmulatedAlgo stated =
      emulated_heuristic(gemm_key(false, true, 16, 16, 64, odd, vb, c, DType::F32, 16));
  EXPECT_EQ(stated.align_a, 4);
  EXPECT_NO_THROW(check_operand_alignment(stated, a + 1, b, c));
}

}  // namespace
}  // namespace wiola::cuda
