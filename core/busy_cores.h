// Cores that this process's own background work keeps busy: a kernel compile (the system
// compiler's process, or NVRTC on the compile thread), which takes seconds. The CPU kernels run
// on the other cores meanwhile (backends/cpu/kernels/parallel.h). Short work does not count: a
// product run on fewer threads needs a oneDNN primitive made for that count, whose code
// generation costs about what a few milliseconds of contention do.
//
// Why: a parallel kernel's threads wait for one another at every barrier, and OpenMP waits by
// spinning. On a machine with as many compute threads as cores, a compiler running beside them
// keeps descheduling one thread, and every barrier waits for it: on 2 cores a GPT-2 decode step
// took 55 ms instead of 14 while its kernels compiled, and a transformer block 40-116 ms instead
// of 5. Running the compiler at a lower priority instead starved it on a loaded machine (kernels
// that a short program needed were still not compiled after four runs).
#pragma once

namespace streamfuse::core {

// While it lives, one core counts as busy. Not copyable; any thread.
class BusyCore {
 public:
  BusyCore();
  ~BusyCore();
  BusyCore(const BusyCore&) = delete;
  BusyCore& operator=(const BusyCore&) = delete;
};

// Cores busy with this process's background work now.
int busy_cores();

}  // namespace streamfuse::core
