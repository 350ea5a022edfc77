// Products of one or a few rows, f32 (kernels.h): dot products of contiguous rows with vectors
// (DotRowsArgs: the matrix-vector products of decoding, read at the machine's memory bandwidth)
// and a few rows of weights combining contiguous rows (combine_rows: attention's att @ v
// while decoding), with the steps after them (bias and residual adds) applied as each result is
// stored.
#include <algorithm>
#include <cstdint>

#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/kernels/product_steps.h"

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

}  // namespace

void dot_rows(const DotRowsArgs& a) {
  const std::int64_t total = a.batches * a.vectors * a.count;
  const std::int64_t grain =
      std::max<std::int64_t>(1, kGrainElements / std::max<std::int64_t>(a.k, 1));
  parallel_for(total, grain, a.num_threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end;) {
      const std::int64_t matrix_vec = i / a.count;  // batch * vectors + v
      const std::int64_t batch = matrix_vec / a.vectors, v = matrix_vec % a.vectors;
      const std::int64_t stop = std::min(end, (matrix_vec + 1) * a.count);
      const float* rows = a.rows + (a.rows_offsets ? a.rows_offsets[batch] : 0);
      const float* vec = a.vec + (a.vec_offsets ? a.vec_offsets[batch] : 0) + v * a.vec_stride;
      for (; i < stop; ++i) {
        const std::int64_t r = i - matrix_vec * a.count;
        const float d = dot(rows + r * a.row_stride, vec, a.k);
        a.out[i] = a.num_steps == 0 ? d : apply_steps(a.steps, a.num_steps, d, batch, v, r);
      }
    }
  });
}

namespace {

// Columns of the result a task computes: four AVX-512 vectors of sums, kept in registers while
// the rows of b stream past.
constexpr std::int64_t kCombineColumns = 64;

// out[c] = sum over j < k of w[j * w_stride] * b[j * b_row_stride + c] for c < n (n at most
// kCombineColumns), each sum in order of j.
void combine(const float* __restrict w, std::int64_t w_stride, const float* __restrict b,
             std::int64_t b_row_stride, std::int64_t k, std::int64_t n, float* __restrict out) {
  float acc[kCombineColumns] = {};
  if (n == kCombineColumns) {  // the whole width, so that the loop has a fixed trip count
    for (std::int64_t j = 0; j < k; ++j) {
      const float x = w[j * w_stride];
      const float* row = b + j * b_row_stride;
      for (std::int64_t c = 0; c < kCombineColumns; ++c) acc[c] += x * row[c];
    }
  } else {
    for (std::int64_t j = 0; j < k; ++j) {
      const float x = w[j * w_stride];
      const float* row = b + j * b_row_stride;
      for (std::int64_t c = 0; c < n; ++c) acc[c] += x * row[c];
    }
  }
  for (std::int64_t c = 0; c < n; ++c) out[c] = acc[c];
}

}  // namespace

void combine_rows(const RowProductArgs& a) {
  const std::int64_t pieces = (a.n + kCombineColumns - 1) / kCombineColumns;
  const std::int64_t total = a.batches * a.m * pieces;
  const std::int64_t grain =
      std::max<std::int64_t>(1, kGrainElements / std::max<std::int64_t>(a.k * kCombineColumns, 1));
  parallel_for(total, grain, a.num_threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t row = t / pieces;  // batch * m + v
      const std::int64_t batch = row / a.m, v = row % a.m;
      const std::int64_t c0 = (t % pieces) * kCombineColumns;
      const std::int64_t width = std::min(kCombineColumns, a.n - c0);
      const float* w = a.a + (a.a_offsets ? a.a_offsets[batch] : 0) + v * a.a_row_stride;
      const float* b = a.b + (a.b_offsets ? a.b_offsets[batch] : 0) + c0;
      float* out = a.out + row * a.n + c0;
      combine(w, a.a_col_stride, b, a.b_row_stride, a.k, width, out);
      apply_steps_to_run(a.steps, a.num_steps, out, width, batch, v, c0);
    }
  });
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
