#include "tests/backends/cuda/emulator/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "tests/backends/cuda/emulator/sanitizers.h"

#ifdef SF_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// The x86-64 switch below, or swapcontext (elsewhere, or when SF_EMU_FIBER_UCONTEXT asks for it
// to test it).
#if defined(__x86_64__) && !defined(SF_EMU_FIBER_UCONTEXT)
#define SF_EMU_FIBER_ASM 1
#else
#include <ucontext.h>
#endif

namespace streamfuse::backends::cuda::emulator {
namespace {

// Kernel threads need little stack; sanitizers make frames several times larger. The mapping is
// reserved, not committed: untouched pages cost nothing.
#if defined(SF_EMU_ASAN) || defined(SF_EMU_TSAN)
constexpr std::size_t kStackBytes = std::size_t{512} << 10;
#else
constexpr std::size_t kStackBytes = std::size_t{128} << 10;
#endif

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "streamfuse CUDA emulator: %s\n", what);
  std::abort();
}

}  // namespace

#ifdef SF_EMU_FIBER_ASM

extern "C" {
// Saves the callee-saved registers on the current stack, stores its pointer in *save, and
// continues on the stack `load` from the state an earlier switch (or the fiber's set-up) left.
void sf_emu_switch_stack(void** save, void* load);
void sf_emu_fiber_entry();
}

// System V: rbx, rbp and r12-r15 are callee-saved (and the MXCSR and x87 control words, which
// kernels leave alone). A new fiber's stack holds those registers with r12 = the Fiber and
// r13 = Fiber::start, so its first switch "returns" into sf_emu_fiber_entry, which calls
// start(fiber) with the stack aligned as a call expects.
asm(R"(
  .text
  .globl sf_emu_switch_stack
  .hidden sf_emu_switch_stack
  .type sf_emu_switch_stack, @function
sf_emu_switch_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size sf_emu_switch_stack, .-sf_emu_switch_stack

  .globl sf_emu_fiber_entry
  .hidden sf_emu_fiber_entry
  .type sf_emu_fiber_entry, @function
sf_emu_fiber_entry:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size sf_emu_fiber_entry, .-sf_emu_fiber_entry
)");

namespace {

void* initial_stack_pointer(void* top, void* fiber, void (*start)(void*)) {
  auto* slot = static_cast<std::uintptr_t*>(top);                    // 16-byte aligned
  slot[-1] = reinterpret_cast<std::uintptr_t>(&sf_emu_fiber_entry);  // returned to
  slot[-2] = 0;                                                      // rbp
  slot[-3] = 0;                                                      // rbx
  slot[-4] = reinterpret_cast<std::uintptr_t>(fiber);                // r12
  slot[-5] = reinterpret_cast<std::uintptr_t>(start);                // r13
  slot[-6] = 0;                                                      // r14
  slot[-7] = 0;                                                      // r15
  return slot - 7;
}

}  // namespace

#else  // swapcontext elsewhere

namespace {
thread_local Fiber* starting_fiber = nullptr;  // makecontext passes only ints
}  // namespace

void Fiber::start_from_ucontext() { start(starting_fiber); }

#endif

Fiber::Fiber(void (*body)(void*), void* arg) : body_(body), arg_(arg) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  mapping_bytes_ = kStackBytes + page;
  mapping_ =
      mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping_ == MAP_FAILED) throw std::bad_alloc();
  // A guard page below the stack: an overflow faults instead of overwriting another fiber's.
  mprotect(mapping_, page, PROT_NONE);
  stack_bottom_ = static_cast<char*>(mapping_) + page;
  stack_bytes_ = kStackBytes;
#ifdef SF_EMU_FIBER_ASM
  context_ = initial_stack_pointer(stack_bottom_ + stack_bytes_, this, &Fiber::start);
#else
  auto* own = new ucontext_t;
  getcontext(own);
  own->uc_stack.ss_sp = stack_bottom_;
  own->uc_stack.ss_size = stack_bytes_;
  own->uc_link = nullptr;
  makecontext(own, &Fiber::start_from_ucontext, 0);
  context_ = own;
  caller_context_ = new ucontext_t;
#endif
#ifdef SF_EMU_TSAN
  tsan_fiber_ = __tsan_create_fiber(0);
#endif
}

Fiber::~Fiber() {
  if (started_.load(std::memory_order_relaxed) && !finished())
    die("a suspended fiber was destroyed");
  tsan_acquire(this);  // all the fiber did happens before its memory (and its owner's) goes
#ifdef SF_EMU_TSAN
  __tsan_destroy_fiber(tsan_fiber_);
#endif
#ifdef SF_EMU_ASAN
  // Frames that were live in the fiber leave poisoned shadow behind; the pages may be reused.
  __asan_unpoison_memory_region(mapping_, mapping_bytes_);
#endif
  munmap(mapping_, mapping_bytes_);
#ifndef SF_EMU_FIBER_ASM
  delete static_cast<ucontext_t*>(context_);
  delete static_cast<ucontext_t*>(caller_context_);
#endif
}

void Fiber::start(void* self) {
  auto* f = static_cast<Fiber*>(self);
#ifdef SF_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &f->caller_stack_bottom_, &f->caller_stack_size_);
#endif
  tsan_acquire(f);
  f->body_(f->arg_);
  die("a fiber's body returned instead of calling finish()");
}

void Fiber::resume() {
  if (finished()) die("a finished fiber was resumed");
#ifdef SF_EMU_TSAN
  // Set once: the fiber reads it after its last announced point, so a later write would race.
  // A fiber is resumed from one thread only.
  if (!tsan_caller_) tsan_caller_ = __tsan_get_current_fiber();
#endif
  // What the caller did so far happens before the fiber continues. The switch itself does not
  // order fibers among themselves: barriers do, so TSan sees a missing __syncthreads as a race.
  tsan_release(this);
#ifdef SF_EMU_ASAN
  __sanitizer_start_switch_fiber(&caller_fake_stack_, stack_bottom_, stack_bytes_);
#endif
#ifdef SF_EMU_TSAN
  __tsan_switch_to_fiber(tsan_fiber_, __tsan_switch_to_fiber_no_sync);
#endif
#ifdef SF_EMU_FIBER_ASM
  started_.store(true, std::memory_order_relaxed);
  sf_emu_switch_stack(&caller_context_, context_);
#else
  if (!started_.exchange(true, std::memory_order_relaxed)) starting_fiber = this;
  swapcontext(static_cast<ucontext_t*>(caller_context_), static_cast<ucontext_t*>(context_));
#endif
#ifdef SF_EMU_ASAN
  __sanitizer_finish_switch_fiber(caller_fake_stack_, nullptr, nullptr);
#endif
}

void Fiber::switch_out(bool last) {
  (void)last;  // used by the sanitizers' bookkeeping only
#ifdef SF_EMU_ASAN
  // nullptr when leaving for good: ASan drops the fiber's fake stack.
  __sanitizer_start_switch_fiber(last ? nullptr : &fake_stack_, caller_stack_bottom_,
                                 caller_stack_size_);
#endif
  void* const own = context_;
  void* const caller = caller_context_;
#ifdef SF_EMU_TSAN
  void* const tsan_caller = tsan_caller_;
  // Leaving for good: what the fiber did happens before it is destroyed (~Fiber acquires).
  // Announced after its last read of its members, which the destruction overwrites.
  if (last) tsan_release(this);
  __tsan_switch_to_fiber(tsan_caller, __tsan_switch_to_fiber_no_sync);
#endif
#ifdef SF_EMU_FIBER_ASM
  (void)own;
  sf_emu_switch_stack(&context_, caller);
#else
  swapcontext(static_cast<ucontext_t*>(own), static_cast<ucontext_t*>(caller));
#endif
#ifdef SF_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack_, &caller_stack_bottom_, &caller_stack_size_);
#endif
  tsan_acquire(this);
}

void Fiber::suspend() { switch_out(false); }

void Fiber::finish() {
  finished_.store(true, std::memory_order_relaxed);
  switch_out(true);
  die("a finished fiber was resumed");
}

}  // namespace streamfuse::backends::cuda::emulator
