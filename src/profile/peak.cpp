#include "profile/peak.hpp"

#include <algorithm>
#include <chrono>

#include "core/error.hpp"

namespace wiola::profile {

std::optional<double> device_peak_tflops(const std::string& device) {
  if (device == "h100" || device == "h200") return 989.0;
  if (device == "a100") return 312.0;
  return std::nullopt;
}

std::string known_devices() { return "h100, h200, a100"; }

double measure_linear_flops(Backend& be, DType dtype, int rows, int out, int in,
                            double seconds) {
  require(rows > 0 && out > 0 && in > 0, "GEMM sizes must be positive, got ", rows, "x", out,
          "x", in);
  const Tensor x = be.alloc(dtype, rows, in), w = be.alloc(dtype, out, in),
               y = be.alloc(dtype, rows, out);
  be.fill(x, 0.5);
  be.fill(w, 0.25);
  using Clock = std::chrono::steady_clock;
  auto product = [&] {
    be.linear_fwd(x, w, y, false);
    be.synchronize();
  };
  product();  // warm-up: thread pool start, page faults
  double best = 1e300, elapsed = 0;
  int reps = 0;
  while (elapsed < seconds || reps < 3) {
    const auto t0 = Clock::now();
    product();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, dt);
    elapsed += dt;
    ++reps;
  }
  return 2.0 * double(rows) * double(out) * double(in) / best;
}

double parse_peak_spec(const std::string& spec) {
  if (spec.empty() || spec == "measured") return 0;
  if (auto t = device_peak_tflops(spec)) return *t * 1e12;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(spec, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used == spec.size() && v > 0, "--peak-tflops: '", spec,
          "' is neither a positive number, 'measured', nor a known device (", known_devices(), ")");
  return v * 1e12;
}

PeakFlops resolve_peak(const std::string& spec, Backend& be, int gemm_n, double gemm_seconds,
                       int threads) {
  PeakFlops p;
  p.per_rank = parse_peak_spec(spec);
  if (p.per_rank > 0) {
    p.source = device_peak_tflops(spec) ? spec + " bf16 dense peak" : std::string("given");
    return p;
  }
  p.per_rank = measure_linear_flops(be, DType::F32, gemm_n, gemm_n, gemm_n, gemm_seconds);
  p.source = "measured sgemm ";
  p.source += std::to_string(gemm_n);
  p.source += "^3 on ";
  p.source += std::to_string(threads);
  p.source += threads == 1 ? " thread per rank" : " threads per rank";
  return p;
}

}  // namespace wiola::profile
