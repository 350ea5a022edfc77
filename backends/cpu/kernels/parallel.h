// A static split of [0, n) over threads. Work below `grain` per thread runs on the caller.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/busy_cores.h"

#ifdef STREAMFUSE_OPENMP
#include <omp.h>
#endif

namespace streamfuse::backends::cpu {

// The threads a kernel may use when asked for `num_threads` (0: all cores).
inline int max_threads(int num_threads) {
#ifdef STREAMFUSE_OPENMP
  return num_threads > 0 ? num_threads : omp_get_max_threads();
#else
  return 1;
#endif
}

// The threads of the process's OpenMP default (OMP_NUM_THREADS, else one per core), read once.
inline int default_threads() {
#ifdef STREAMFUSE_OPENMP
  static const int n = omp_get_max_threads();
  return n;
#else
  return 1;
#endif
}

// The threads an op asked to use `num_threads` (0: all cores) runs on: `num_threads` itself,
// except while this process's background work keeps cores busy (core/busy_cores.h), when it gets
// the cores left, at least one. Resolve it once per op: the count may change between two calls.
inline int threads_beside_background(int num_threads) {
  const int busy = core::busy_cores();
  if (busy == 0) return num_threads;
  const int wanted = num_threads > 0 ? num_threads : default_threads();
  return std::max(1, std::min(wanted, default_threads() - busy));
}

// Calls fn(begin, end) on disjoint ranges covering [0, n), at most `num_threads` at once
// (0: all cores). Ranges are contiguous and fixed by n and the thread count only.
template <class F>
void parallel_for(std::int64_t n, std::int64_t grain, int num_threads, F&& fn) {
  if (n <= 0) return;
#ifdef STREAMFUSE_OPENMP
  int threads = max_threads(num_threads);
  threads = static_cast<int>(std::min<std::int64_t>(threads, (n + grain - 1) / grain));
  if (threads > 1 && !omp_in_parallel()) {
#pragma omp parallel num_threads(threads)
    {
      const std::int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      const std::int64_t begin = n * t / nt, end = n * (t + 1) / nt;
      if (begin < end) fn(begin, end);
    }
    return;
  }
#endif
  fn(std::int64_t{0}, n);
}

}  // namespace streamfuse::backends::cpu
