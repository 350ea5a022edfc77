// The floor of a kernel that reads n floats and writes n: a copy of them on every core, each
// thread a contiguous part (memcpy, with the streaming stores glibc picks for large parts).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace streamfuse::bench {

inline void parallel_copy(const float* x, float* y, std::int64_t n) {
#pragma omp parallel
  {
#ifdef _OPENMP
    const std::int64_t t = omp_get_thread_num(), threads = omp_get_num_threads();
#else
    const std::int64_t t = 0, threads = 1;
#endif
    const std::int64_t chunk = (n + threads - 1) / threads;
    const std::int64_t lo = std::min(n, t * chunk), hi = std::min(n, lo + chunk);
    std::memcpy(y + lo, x + lo, static_cast<std::size_t>(hi - lo) * sizeof(float));
  }
}

}  // namespace streamfuse::bench
