#include "bench/gelu_hand_loop.h"

#include "core/vector_math.h"

namespace streamfuse::bench {

void gelu_hand_loop(const float* x, float* y, std::int64_t n, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i] * 0.70710678118654752f;
    const float a = __builtin_fabsf(v);
    const float t = 1.0f / (a * 0.3275911f + 1.0f);
    const float poly =
        ((((t * 1.061405429f - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t +
         0.254829592f) *
        t;
    const float e = 1.0f - poly * sf_exp(-v * v);
    const float erf = v > 0.0f ? e : -e;
    y[i] = x[i] * (erf + 1.0f) * 0.5f;
  }
}

}  // namespace streamfuse::bench
