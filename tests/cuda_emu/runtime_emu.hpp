#pragma once
// What the emulated CUDA runtime (runtime_emu.cpp) offers tests beyond
// backend/cuda/runtime.hpp.
#include <cstddef>

namespace wiola::cuda {

// The emulated device's memory: allocations beyond `bytes` in all fail as a
// full GPU's do (try_allocate returns nullptr, allocate throws). 0: no limit
// but the host's.
void emu_set_memory_limit(std::size_t bytes);
// Bytes the emulated device holds now (allocated, not yet released).
std::size_t emu_memory_in_use();

}  // namespace wiola::cuda
