// The libFuzzer entry of a fuzz binary: it links exactly one target source.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (wiola::fuzz::registry().size() != 1) {
    std::fprintf(stderr, "fuzz: this binary holds %zu targets, not 1\n", wiola::fuzz::registry().size());
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wiola::fuzz::registry().front().run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
