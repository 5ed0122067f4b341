// The stand-in for cuBLASLt (backend/cuda/blas.hpp) on OpenBLAS: operands
// as stored (bf16 widened to fp32 exactly), one fp32 sgemm, the result
// rounded to C's type. cuBLASLt's own summation order differs; the op tests'
// tolerances allow for that. Algorithms are chosen and cached as the real
// wrapper does (by gemm_key), and each refuses operands less aligned than it
// was chosen for (blas_emu.hpp).
#include "blas_emu.hpp"

#include <cblas.h>

#include <map>
#include <vector>

#include "backend/cuda/blas.hpp"

#include "backend/cuda/device_counters.hpp"
#include "cuda_emu.hpp"
#include "core/error.hpp"

namespace wiola::cuda {

struct Blas::State {
  std::map<GemmKey, EmulatedAlgo> algos;
};

EmulatedAlgo emulated_heuristic(const GemmKey& key) {
  return {key.align_a, key.align_b, key.align_c};
}

void check_operand_alignment(const EmulatedAlgo& algo, const void* a, const void* b,
                             const void* c) {
  const struct {
    const char* name;
    const void* p;
    std::int64_t assumed;
  } operands[] = {{"A", a, algo.align_a}, {"B", b, algo.align_b}, {"C/D", c, algo.align_c}};
  for (const auto& o : operands)
    require(address_alignment(o.p) >= o.assumed, "emulated cuBLASLt: operand ", o.name, " at ",
            o.p, " is ", address_alignment(o.p), "-byte aligned, but the algorithm was chosen "
            "for ", o.assumed, "-byte aligned operands (an alignment the wrapper did not state, "
            "or an algorithm reused from another product)");
}

Blas::Blas(Stream) : state_(std::make_unique<State>()) {}
Blas::~Blas() = default;

namespace {

// rows x cols of a row-major matrix with stride ld, as fp32.
std::vector<float> widen(const void* p, DType t, std::int64_t rows, std::int64_t cols,
                         std::int64_t ld) {
  require(t == DType::F32 || t == DType::BF16, "emulated BLAS: matrices must be fp32 or bf16");
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      out[std::size_t(r * cols + c)] =
          t == DType::F32 ? static_cast<const float*>(p)[r * ld + c]
                          : __bfloat162float(static_cast<const __nv_bfloat16*>(p)[r * ld + c]);
  return out;
}

// The product itself, run when the stream reaches it.
void run_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
              MatrixView a, MatrixView b, float beta, void* c, DType c_dtype, std::int64_t ldc) {
  const std::int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
  const std::int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
  const std::vector<float> af = widen(a.data, a.dtype, a_rows, a_cols, a.ld);
  const std::vector<float> bf = widen(b.data, b.dtype, b_rows, b_cols, b.ld);
  // As cuBLAS: with beta = 0, C is never read (it may hold anything).
  std::vector<float> cf = beta != 0.0f ? widen(c, c_dtype, m, n, ldc)
                                       : std::vector<float>(static_cast<std::size_t>(m * n), 0.0f);
  if (k > 0)
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                int(m), int(n), int(k), alpha, af.data(), int(a_cols), bf.data(), int(b_cols),
                beta, cf.data(), int(n));
  else
    for (float& v : cf) v *= beta;
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t col = 0; col < n; ++col) {
      const float v = cf[std::size_t(r * n + col)];
      if (c_dtype == DType::F32)
        static_cast<float*>(c)[r * ldc + col] = v;
      else
        static_cast<__nv_bfloat16*>(c)[r * ldc + col] = __float2bfloat16(v);
    }
}

}  // namespace

void Blas::gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                MatrixView a, MatrixView b, float beta, void* c, DType c_dtype, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  count_device_event(DeviceEvent::Gemm, 2 * m * n * k);
  require(a.dtype == b.dtype, "emulated BLAS: A is ", dtype_name(a.dtype), " but B is ",
          dtype_name(b.dtype));
  const GemmKey key = gemm_key(ta, tb, m, n, k, a, b, c, c_dtype, ldc);
  auto it = state_->algos.find(key);
  if (it == state_->algos.end()) it = state_->algos.emplace(key, emulated_heuristic(key)).first;
  check_operand_alignment(it->second, a.data, b.data, c);
  emu::enqueue_device_work(
      [=] { run_gemm(ta, tb, m, n, k, alpha, a, b, beta, c, c_dtype, ldc); });
}

}  // namespace wiola::cuda
