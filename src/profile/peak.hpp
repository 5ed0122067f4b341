#pragma once
// The peak FLOP/s that MFU is measured against, per rank: a named device's
// dense peak, a number given by the user, or (on the CPU backend) a measured
// single-precision GEMM on the rank's own threads.
#include <optional>
#include <string>

#include "backend/backend.hpp"

namespace wiola::profile {

struct PeakFlops {
  double per_rank = 0;  // FLOP/s
  std::string source;   // "measured sgemm 1024^3, 1 thread", "h100 bf16 dense", "given"
};

// Known devices (dense bf16 tensor-core peak, no sparsity): h100 and h200 989
// TFLOP/s, a100 312. Lower-case names; nullopt when unknown.
std::optional<double> device_peak_tflops(const std::string& device);
// "h100, h200, a100" for messages.
std::string known_devices();

// FLOP/s of the backend's linear layer y = x·Wᵀ in `dtype`, x [rows, in],
// W [out, in] (2·rows·out·in FLOPs per product; on the CPU backend an fp32
// GEMM on the calling thread's OpenMP/BLAS threads): the best single
// repetition over at least `seconds` of repetitions (after one warm-up).
// Every rank of a job should call it at the same time, so ranks sharing
// cores share them here too.
double measure_linear_flops(Backend& be, DType dtype, int rows, int out, int in, double seconds);

// Checks --peak-tflops: a number (TFLOP/s per rank), a device name, or
// "measured". Returns the peak per rank, 0 for "measured"; throws
// wiola::Error naming the flag otherwise.
double parse_peak_spec(const std::string& spec);
// The peak for --peak-tflops; "measured" runs measure_linear_flops with
// gemm_n³ fp32 on `be`.
PeakFlops resolve_peak(const std::string& spec, Backend& be, int gemm_n, double gemm_seconds,
                       int threads);

}  // namespace wiola::profile
