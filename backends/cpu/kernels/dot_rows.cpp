// Dot products of contiguous f32 rows with a vector (kernels.h, DotRowsArgs): the matrix-vector
// products of decoding, read at the machine's memory bandwidth, with the steps after them (bias
// and residual adds) applied as each result is stored.
#include <algorithm>
#include <cstdint>

#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/parallel.h"

namespace streamfuse::backends::cpu::SF_ISA_NS {
namespace {

// Lanes of the sum. Written as loops over a fixed array (no intrinsics), so every ISA level
// computes the same roundings in the same order: AVX-512 as four vectors, AVX2 as eight, SSE
// as sixteen. 64 keeps enough independent adds in flight to hide their latency on each.
constexpr int kLanes = 64;

// At least this many elements per thread, so a small product does not pay for a fork.
constexpr std::int64_t kGrainElements = 16384;

float dot(const float* __restrict row, const float* __restrict vec, std::int64_t k) {
  float acc[kLanes] = {};
  std::int64_t j = 0;
  for (; j + kLanes <= k; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += row[j + l] * vec[j + l];
  for (std::int64_t l = 0; l < k - j; ++l) acc[l] += row[j + l] * vec[j + l];
  for (int half = kLanes / 2; half >= 1; half /= 2)
    for (int l = 0; l < half; ++l) acc[l] += acc[l + half];
  return acc[0];
}

// `v` after the steps, for result `i` of matrix `batch`. One statement per step: the kernels
// build with -ffp-contract=off, so each rounds once, as the element-wise op does.
float apply_steps(const DotRowsArgs& a, float v, std::int64_t batch, std::int64_t i) {
  for (int s = 0; s < a.num_steps; ++s) {
    const DotRowsStep& step = a.steps[s];
    const float x =
        step.data[(step.batch_offsets ? step.batch_offsets[batch] : 0) + i * step.stride];
    switch (step.op) {
      case 0:
        v = v + x;
        break;
      case 1:
        v = v - x;
        break;
      case 2:
        v = v * x;
        break;
      default:
        v = v / x;
        break;
    }
  }
  return v;
}

}  // namespace

void dot_rows(const DotRowsArgs& a) {
  const std::int64_t total = a.batches * a.count;
  const std::int64_t grain =
      std::max<std::int64_t>(1, kGrainElements / std::max<std::int64_t>(a.k, 1));
  parallel_for(total, grain, a.num_threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end;) {
      const std::int64_t batch = i / a.count;
      const std::int64_t stop = std::min(end, (batch + 1) * a.count);
      const float* rows = a.rows + (a.rows_offsets ? a.rows_offsets[batch] : 0);
      const float* vec = a.vec + (a.vec_offsets ? a.vec_offsets[batch] : 0);
      if (a.num_steps == 0) {
        for (; i < stop; ++i) a.out[i] = dot(rows + (i - batch * a.count) * a.row_stride, vec, a.k);
      } else {
        for (; i < stop; ++i) {
          const std::int64_t r = i - batch * a.count;
          a.out[i] = apply_steps(a, dot(rows + r * a.row_stride, vec, a.k), batch, r);
        }
      }
    }
  });
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
