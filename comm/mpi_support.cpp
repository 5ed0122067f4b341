// Identity, fatal errors and type mapping for the MPI implementation.
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "comm/mpi_internal.hpp"
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#include "core/error.hpp"

namespace wiola::comm::detail {

const Identity& identity() {
  static const Identity id = [] {
    Identity r;
    // Failures here cannot be reported with an identity; keep the defaults.
    if (MPI_Comm_rank(MPI_COMM_WORLD, &r.world_rank) != MPI_SUCCESS) r.world_rank = -1;
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    if (MPI_Get_processor_name(host, &len) == MPI_SUCCESS && len > 0) r.host.assign(host, len);
    return r;
  }();
  return id;
}

void die(const std::string& msg, int code, const std::function<void()>& before_abort) {
  const Identity& id = identity();
  std::fprintf(stderr, "rank %d (host %s): %s\n", id.world_rank, id.host.c_str(), msg.c_str());
  std::fflush(stderr);
  if (before_abort) before_abort();
  // MPI_Abort should not return; if it does (or fails) there is nothing left
  // to report to, so leave without running destructors that could block in MPI.
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

std::string mpi_error_string(int rc) {
  char buf[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  // Not checked: this is already the error path, and a failure here only
  // loses the text, which the code below reports instead.
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS || len <= 0)
    return "MPI error code " + std::to_string(rc);
  return std::string(buf, len);
}

std::string format_seconds(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

void check_global(int rc, const char* call) {
  if (rc != MPI_SUCCESS)
    die(std::string(call) + " failed: " + mpi_error_string(rc), kAbortMpiError);
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I32: return MPI_INT32_T;
    case DType::BF16: return MPI_UINT16_T;  // moved as raw 16-bit words
  }
  fail("comm: unknown dtype");
}

MPI_Datatype mpi_reduce_type(DType t) {
  require(t != DType::BF16,
          "comm: bf16 reductions are not supported over MPI; reduce in fp32 (SPEC: fp32 "
          "reductions)");
  return mpi_type(t);
}

MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::Sum ? MPI_SUM : MPI_MAX; }

bool device_aware_mpi() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  static const bool aware = MPIX_Query_cuda_support() == 1;
  return aware;
#else
  return false;  // e.g. Debian's Open MPI: built without CUDA support
#endif
}

}  // namespace wiola::comm::detail
