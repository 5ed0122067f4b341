#pragma once
#include <string>
namespace wiola {
// Threads used by the CPU backend's OpenMP loops and by OpenBLAS (0: leave
// the libraries' defaults). Several ranks on one machine want 1 each.
void set_cpu_threads(int threads);
int cpu_threads();
// The GEMM kernel OpenBLAS runs, e.g. "Haswell" (OPENBLAS_CORETYPE chooses
// another): products' bits can differ between kernels, so runs and logs name it.
std::string cpu_blas_kernel();
}  // namespace wiola
