// cuBLASLt behind backend/cuda/blas.hpp. A row-major product is the
// column-major product of the transposes: C = op(A)·op(B) (row-major) is
// Cᵀ = op(B)ᵀ·op(A)ᵀ (column-major), so A and B swap places and keep their
// transpose flags. Algorithms are chosen by cuBLASLt's heuristic once per
// shape, type and operand alignment (gemm_key.hpp) and cached; the preferences
// state each operand's real alignment, so that an algorithm never assumes more
// than the pointers it runs on give (cuBLASLt's default assumption is 256 bytes).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>

#include "backend/cuda/blas.hpp"

#include "backend/cuda/device_counters.hpp"
#include "backend/cuda/gemm_key.hpp"
#include "core/error.hpp"
#include "core/process_identity.hpp"

namespace wiola::cuda {

namespace {

[[noreturn]] void fail_blas(cublasStatus_t rc, const char* call, const char* file, int line) {
  fail("cuBLASLt error in ", call, " at ", file, ":", line, " on ", process_identity().describe(),
       ": ", cublasGetStatusName(rc), ": ", cublasGetStatusString(rc));
}

#define WIOLA_CUBLAS(call)                                                    \
  do {                                                                        \
    const cublasStatus_t wiola_rc = (call);                                   \
    if (wiola_rc != CUBLAS_STATUS_SUCCESS) fail_blas(wiola_rc, #call, __FILE__, __LINE__); \
  } while (0)

cudaDataType_t cuda_type(DType t) {
  require(t == DType::F32 || t == DType::BF16, "cuBLASLt: matrices must be fp32 or bf16, got ",
          dtype_name(t));
  return t == DType::F32 ? CUDA_R_32F : CUDA_R_16BF;
}

constexpr std::size_t kWorkspaceBytes = 32u << 20;

}  // namespace

struct Blas::State {
  cublasLtHandle_t handle = nullptr;
  Stream stream = nullptr;
  void* workspace = nullptr;
  std::map<GemmKey, cublasLtMatmulAlgo_t> algos;
};

Blas::Blas(Stream stream) : state_(std::make_unique<State>()) {
  state_->stream = stream;
  WIOLA_CUBLAS(cublasLtCreate(&state_->handle));
  state_->workspace = allocate(kWorkspaceBytes, stream, "the cuBLASLt workspace");
}

Blas::~Blas() {
  if (state_->workspace) cudaFreeAsync(state_->workspace, static_cast<cudaStream_t>(state_->stream));
  if (state_->handle) cublasLtDestroy(state_->handle);
}

void Blas::gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                MatrixView a, MatrixView b, float beta, void* c, DType c_dtype, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  count_device_event(DeviceEvent::Gemm, 2 * m * n * k);
  require(a.dtype == b.dtype, "cuBLASLt: A is ", dtype_name(a.dtype), " but B is ",
          dtype_name(b.dtype));
  const cudaDataType_t tab = cuda_type(a.dtype), tc = cuda_type(c_dtype);
  // Column-major problem: D (n x m) = op(B)ᵀ (n x k) · op(A)ᵀ (k x m).
  const cublasOperation_t op_first = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtMatmulDesc_t desc = nullptr;
  WIOLA_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  WIOLA_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                              sizeof op_first));
  WIOLA_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                              sizeof op_second));
  // Stored (column-major) shapes: the first operand is B's buffer, the second A's.
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  const std::uint64_t b_rows = tb ? k : n, b_cols = tb ? n : k;  // B buffer seen column-major
  const std::uint64_t a_rows = ta ? m : k, a_cols = ta ? k : m;
  WIOLA_CUBLAS(cublasLtMatrixLayoutCreate(&la, tab, b_rows, b_cols, b.ld));
  WIOLA_CUBLAS(cublasLtMatrixLayoutCreate(&lb, tab, a_rows, a_cols, a.ld));
  WIOLA_CUBLAS(cublasLtMatrixLayoutCreate(&lc, tc, n, m, ldc));

  const GemmKey key = gemm_key(ta, tb, m, n, k, a, b, c, c_dtype, ldc);
  auto it = state_->algos.find(key);
  if (it == state_->algos.end()) {
    cublasLtMatmulPreference_t pref = nullptr;
    WIOLA_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const std::size_t ws = kWorkspaceBytes;
    WIOLA_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    // cuBLASLt's A is our B's buffer and its B our A's (see the top); C and D
    // are the one output buffer.
    const auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attr, std::int64_t bytes) {
      const std::uint32_t v = static_cast<std::uint32_t>(bytes);
      WIOLA_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, attr, &v, sizeof v));
    };
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b);
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a);
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c);
    prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_c);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    WIOLA_CUBLAS(cublasLtMatmulAlgoGetHeuristic(state_->handle, desc, la, lb, lc, lc, pref, 1,
                                                &result, &found));
    cublasLtMatmulPreferenceDestroy(pref);
    require(found > 0, "cuBLASLt: no algorithm for a ", m, "x", n, "x", k, " product on ",
            process_identity().describe());
    it = state_->algos.emplace(key, result.algo).first;
  }
  WIOLA_CUBLAS(cublasLtMatmul(state_->handle, desc, &alpha, b.data, la, a.data, lb, &beta, c, lc,
                              c, lc, &it->second, state_->workspace, kWorkspaceBytes,
                              static_cast<cudaStream_t>(state_->stream)));
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
}

}  // namespace wiola::cuda
