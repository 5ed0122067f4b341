#include "backend/cpu_threads.hpp"

#include <cblas.h>
#include <omp.h>

namespace wiola {

void set_cpu_threads(int threads) {
  if (threads <= 0) return;
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int cpu_threads() { return omp_get_max_threads(); }

std::string cpu_blas_kernel() {
  const char* name = openblas_get_corename();
  return name ? name : "unknown";
}

}  // namespace wiola
