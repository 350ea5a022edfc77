// A hand-written single-pass GELU (custom erf), compiled with the JIT's flags: the best a fused
// kernel can do, reading x once and writing y once.
#pragma once

#include <cstdint>

namespace streamfuse::bench {

// y[i] = gelu_custom(x[i]) for i in [0, n), over `threads` OpenMP threads.
void gelu_hand_loop(const float* x, float* y, std::int64_t n, int threads);

}  // namespace streamfuse::bench
