#include "ops/kernels.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace wiola::ops {

#ifndef WIOLA_HAVE_AVX2_KERNELS
const Kernels* kernels_avx2() { return nullptr; }
#endif
#ifndef WIOLA_HAVE_AVX512_KERNELS
const Kernels* kernels_avx512() { return nullptr; }
#endif

namespace {

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

bool cpu_has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         cpu_has_avx2();
#else
  return false;
#endif
}

std::atomic<const Kernels*> g_kernels{nullptr};

const Kernels* choose() {
  const std::vector<const Kernels*> all = available_kernels();
  const char* want = std::getenv("WIOLA_CPU_KERNELS");
  if (want == nullptr || *want == '\0') return all.back();
  std::string names;
  for (const Kernels* k : all) {
    if (k->isa == std::string(want)) return k;
    names += names.empty() ? "" : ", ";
    names += k->isa;
  }
  fail("WIOLA_CPU_KERNELS=", want, ": not an instruction set this build and CPU have (",
       names, ")");
}

}  // namespace

std::vector<const Kernels*> available_kernels() {
  std::vector<const Kernels*> out{kernels_sse()};
  if (kernels_avx2() && cpu_has_avx2()) out.push_back(kernels_avx2());
  if (kernels_avx512() && cpu_has_avx512()) out.push_back(kernels_avx512());
  return out;
}

const Kernels& kernels() {
  const Kernels* k = g_kernels.load(std::memory_order_acquire);
  if (k == nullptr) {
    const Kernels* chosen = choose();
    const Kernels* expected = nullptr;
    g_kernels.compare_exchange_strong(expected, chosen, std::memory_order_acq_rel);
    k = g_kernels.load(std::memory_order_acquire);
  }
  return *k;
}

void use_kernels(const Kernels& k) { g_kernels.store(&k, std::memory_order_release); }

}  // namespace wiola::ops
