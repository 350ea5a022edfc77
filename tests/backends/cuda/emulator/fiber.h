// A fiber: a function running on a stack of its own, switched to and from on one OS thread. The
// emulated driver runs each thread of a block that calls __syncthreads as one, so a block's
// threads can all reach a barrier before any goes past it.
//
// On x86-64 a switch saves the callee-saved registers and swaps stack pointers (a few
// nanoseconds); elsewhere it is swapcontext, whose signal-mask system call costs ~0.5 us, which a
// 64-block x 256-thread launch with 9 barriers does 300,000 times. Switches are announced to
// AddressSanitizer and ThreadSanitizer, which otherwise take the new stack for a corrupted one.
// For ThreadSanitizer, resume() orders what its caller did before what the fiber does next, and
// nothing else: other orders (a block's barriers) are announced by the caller of these classes,
// so that two threads of a block touching the same data without a barrier remain a race.
#pragma once

#include <atomic>
#include <cstddef>

namespace streamfuse::backends::cuda::emulator {

class Fiber {
 public:
  // A fiber that runs `body(arg)` when first resumed. `body` must end by calling finish().
  Fiber(void (*body)(void*), void* arg);
  // Only a fiber that finished (or never started) may be destroyed.
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // From the thread's own stack (always the same thread for one fiber): runs the fiber until it
  // suspends or finishes.
  void resume();
  // From inside the fiber: back to resume()'s caller, until the next resume().
  void suspend();
  // From inside the fiber, last: back to resume()'s caller for good.
  [[noreturn]] void finish();
  bool finished() const { return finished_.load(std::memory_order_relaxed); }

 private:
  static void start(void* self);
  static void start_from_ucontext();  // where there is no x86-64 switch
  void switch_out(bool last);         // suspend() or finish()

  void (*body_)(void*);
  void* arg_;
  void* mapping_ = nullptr;  // the stack, a guard page first
  std::size_t mapping_bytes_ = 0;
  char* stack_bottom_ = nullptr;  // above the guard page
  std::size_t stack_bytes_ = 0;
  void* context_ = nullptr;         // the fiber's saved state (stack pointer or ucontext)
  void* caller_context_ = nullptr;  // resume()'s caller's
  // Atomic: ThreadSanitizer sees no order between the fiber and its caller but what barriers
  // and resume() announce (fiber.cpp).
  std::atomic<bool> started_{false}, finished_{false};
  // Sanitizer bookkeeping: the caller's stack as ASan reports it, its fake stacks, TSan fibers.
  const void* caller_stack_bottom_ = nullptr;
  std::size_t caller_stack_size_ = 0;
  void* fake_stack_ = nullptr;
  void* caller_fake_stack_ = nullptr;
  void* tsan_fiber_ = nullptr;
  void* tsan_caller_ = nullptr;
};

}  // namespace streamfuse::backends::cuda::emulator
