#pragma once
namespace wiola {
// Threads used by the CPU backend's OpenMP loops and by OpenBLAS (0: leave
// the libraries' defaults). Several ranks on one machine want 1 each.
void set_cpu_threads(int threads);
int cpu_threads();
}  // namespace wiola
