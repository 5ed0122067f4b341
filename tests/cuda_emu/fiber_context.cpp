#include "fiber_context.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
// wiola_emu_switch(void** save_sp, void* load_sp): pushes the callee-saved
// registers and the SSE/x87 control words, stores the stack pointer, loads
// the other one and pops the same in reverse (System V AMD64 ABI).
extern "C" void wiola_emu_switch(void** save_sp, void* load_sp);
asm(R"(
    .text
    .globl wiola_emu_switch
    .type wiola_emu_switch,@function
wiola_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size wiola_emu_switch,.-wiola_emu_switch
    .section .note.GNU-stack,"",@progbits
    .text
)");
#endif

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace wiola::emu {

namespace {
// A fiber stack is reused by the next launch's fibers. Under ASan the frames
// an earlier fiber left when it switched away for good are still poisoned
// there; the new fiber starts on clean memory.
void unpoison(char* stack, std::size_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  ASAN_UNPOISON_MEMORY_REGION(stack, bytes);
#else
  (void)stack;
  (void)bytes;
#endif
}
}  // namespace

#if defined(__x86_64__)

void prepare_fiber(FiberContext& c, char* stack, std::size_t bytes, void (*entry)()) {
  unpoison(stack, bytes);
  // From the top (16-byte aligned): a null return address for `entry`, the
  // address `ret` jumps to, six zeroed callee-saved registers, and the
  // control words. After `ret`, rsp = top - 8, as after a call.
  auto top = reinterpret_cast<std::uintptr_t>(stack + bytes) & ~std::uintptr_t(15);
  auto* slot = reinterpret_cast<std::uint64_t*>(top);
  *--slot = 0;
  *--slot = reinterpret_cast<std::uint64_t>(entry);
  for (int i = 0; i < 6; ++i) *--slot = 0;
  std::uint32_t mxcsr = 0;
  std::uint16_t fpucw = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  std::uint64_t words = 0;
  std::memcpy(&words, &mxcsr, 4);
  std::memcpy(reinterpret_cast<char*>(&words) + 4, &fpucw, 2);
  *--slot = words;
  c.sp = slot;
}

void switch_fiber(FiberContext& from, FiberContext& to) { wiola_emu_switch(&from.sp, to.sp); }

#else

void prepare_fiber(FiberContext& c, char* stack, std::size_t bytes, void (*entry)()) {
  unpoison(stack, bytes);
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}

void switch_fiber(FiberContext& from, FiberContext& to) { swapcontext(&from.uc, &to.uc); }

#endif

}  // namespace wiola::emu
