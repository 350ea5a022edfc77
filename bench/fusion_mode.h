// How a benchmark row runs streamfuse code: fusion off, fused through the interpreter, or fused
// and compiled; and the warm-up that leaves the compiled mode timing compiled kernels (the first
// runs interpret while they compile; compile time is the cold-start benchmark's subject).
#pragma once

#include "jit/kernel_cache.h"
#include "runtime/device_runtime.h"
#include "streamfuse/streamfuse.h"

namespace streamfuse::bench {

enum FusionMode { kUnfused, kInterpreted, kCompiled };

inline const char* mode_name(FusionMode mode) {
  constexpr const char* kNames[] = {"unfused", "fused-interpreted", "fused-jit"};
  return kNames[mode];
}

inline void use_mode(FusionMode mode) {
  Config c = config();
  c.fusion = mode != kUnfused;
  c.jit = mode == kCompiled ? JitMode::kCompile : JitMode::kInterpret;
  set_config(c);
}

// Runs `run` (one iteration, returning its result) three times, each time waiting for the
// kernels it sent to the compiler.
template <class Run>
void warm_up(Run&& run) {
  for (int i = 0; i < 3; ++i) {
    Tensor warm = run();
    synchronize();
    if (auto* cache = runtime::DeviceRuntime::get(Device::cpu()).kernel_cache()) cache->wait_idle();
  }
}

}  // namespace streamfuse::bench
