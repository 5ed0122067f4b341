#pragma once
// Switching between fibers (the emulated CUDA threads): save this fiber's
// registers and stack pointer, load another's. On x86-64 a few instructions
// that keep the signal mask alone (glibc's swapcontext makes a system call on
// every switch, which made the emulation spend most of its time in the
// kernel); elsewhere ucontext.
#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace wiola::emu {

struct FiberContext {
#if defined(__x86_64__)
  void* sp = nullptr;
#else
  ucontext_t uc{};
#endif
};

// Makes `c` start `entry` on `stack` when first switched to. `entry` must
// never return: it switches away at its end.
void prepare_fiber(FiberContext& c, char* stack, std::size_t bytes, void (*entry)());
// Saves the running context into `from` and continues `to`.
void switch_fiber(FiberContext& from, FiberContext& to);

}  // namespace wiola::emu
