// Batched f32 matrix products whose b differs in every matrix (kernels.h, RowProductArgs):
// attention's q @ k^T and att @ v over more rows than the few-row kernels take. A register tile of
// kRows rows by kVectors vectors of columns accumulates fused multiply-adds over j in order, from a
// panel of b packed for its columns (contiguous along them, zero beyond n); a's rows are read in
// place, one broadcast per row and j. batched_gemm_chain runs two such products with a row-wise
// stage between them a task's rows at a time (attention: kernels.h, RowChainArgs).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "backends/cpu/kernels/isa_namespace.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/kernels/product_steps.h"

namespace streamfuse::backends::cpu::SF_ISA_NS {
namespace {

// The vector of this ISA level: AVX-512 (32 registers: a tile of 6 x 4 vectors), AVX2 with FMA
// (16: 6 x 2), else one float at a time with std::fma (the same roundings, in software).
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kWidth = 16, kVectors = 4;
inline Vec zero() { return _mm512_setzero_ps(); }
inline Vec load(const float* p) { return _mm512_loadu_ps(p); }
inline Vec splat(float x) { return _mm512_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kWidth = 8, kVectors = 2;
inline Vec zero() { return _mm256_setzero_ps(); }
inline Vec load(const float* p) { return _mm256_loadu_ps(p); }
inline Vec splat(float x) { return _mm256_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
#else
using Vec = float;
constexpr int kWidth = 1, kVectors = 4;
inline Vec zero() { return 0.0f; }
inline Vec load(const float* p) { return *p; }
inline Vec splat(float x) { return x; }
inline Vec fma(Vec a, Vec b, Vec c) { return std::fma(a, b, c); }
inline void store(float* p, Vec v) { *p = v; }
#endif

constexpr int kRows = 6;
constexpr int kMaxSteps = 4;  // steps of one value per matrix applied in registers
constexpr std::int64_t kPanel = std::int64_t{kWidth} * kVectors;  // columns of a tile

// Rows of a per task: a task packs its matrix's b once (when the task before it on the thread had
// another matrix), so a few tiles of rows share it.
constexpr std::int64_t kTaskRows = 8 * kRows;

// sums[r * ldc + c] = sum over j < k of a[r * lda + j] * panel[j * kPanel + c], for r < kRows and
// c < kPanel: fused multiply-adds in order of j from 0, starting from +0 (so the first term is its
// product rounded once, and a product of -0 sums to +0).
//
// Steps of one value for the whole matrix (attention's scale), `count` of them, are applied to the
// sums in registers before they are stored: ops[s] 0 to 3 for + - * / with values[s].
void tile_sums(const float* __restrict a, std::int64_t lda, const float* __restrict panel,
               std::int64_t k, float* __restrict sums, std::int64_t ldc, const int* ops,
               const float* values, int count) {
  Vec acc[kRows][kVectors];
  for (auto& row : acc)
    for (Vec& v : row) v = zero();
  for (std::int64_t j = 0; j < k; ++j) {
    Vec b[kVectors];
    for (int v = 0; v < kVectors; ++v) b[v] = load(panel + j * kPanel + v * kWidth);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const Vec x = splat(a[r * lda + j]);
      for (int v = 0; v < kVectors; ++v) acc[r][v] = fma(x, b[v], acc[r][v]);
    }
  }
  for (int s = 0; s < count; ++s) {
    const Vec x = splat(values[s]);
    for (auto& row : acc)
      for (Vec& v : row)
        v = ops[s] == 0 ? v + x : ops[s] == 1 ? v - x : ops[s] == 2 ? v * x : v / x;
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVectors; ++v) store(sums + r * ldc + v * kWidth, acc[r][v]);
}

// Matrix `batch`'s b as panels of kPanel columns, each k rows of kPanel (zero past n).
void pack_b(const RowProductArgs& g, std::int64_t batch, std::vector<float>& packed) {
  const std::int64_t panels = (g.n + kPanel - 1) / kPanel;
  packed.assign(static_cast<std::size_t>(panels * kPanel * g.k), 0.0f);
  const float* b = g.b + (g.b_offsets ? g.b_offsets[batch] : 0);
  for (std::int64_t p = 0; p < panels; ++p) {
    float* dst = packed.data() + p * kPanel * g.k;
    const std::int64_t c0 = p * kPanel, width = std::min(kPanel, g.n - c0);
    if (g.b_col_stride == 1) {
      for (std::int64_t j = 0; j < g.k; ++j)
        std::copy_n(b + j * g.b_row_stride + c0, width, dst + j * kPanel);
    } else {  // b's columns contiguous (k^T): read along them
      for (std::int64_t c = 0; c < width; ++c) {
        const float* column = b + (c0 + c) * g.b_col_stride;
        for (std::int64_t j = 0; j < g.k; ++j) dst[j * kPanel + c] = column[j * g.b_row_stride];
      }
    }
  }
}

// What a chain's task computes of a product: columns [0, n) (the rest stored as zeros), and the
// sums over j < k only (the terms after it are zero products: a's values there are zeros and b's
// rows finite, so each would add a zero to its sum and leave it as it is; a sum is never -0).
struct Limits {
  std::int64_t n, k;
};

// Rows [r0, r0 + rows) of matrix `batch` (rows at most kTaskRows), from its packed b: row r0 of
// a at `a` (rows lda apart), row r0 of the result stored at `out` (rows ldc apart). Steps index
// their operands by the rows' places in the matrix, wherever they are stored.
void task_rows(const RowProductArgs& g, std::int64_t batch, std::int64_t r0, std::int64_t rows,
               const float* a, std::int64_t lda, float* out, std::int64_t ldc,
               const std::vector<float>& packed, std::vector<float>& padded,
               Limits limits = {-1, -1}) {
  const std::int64_t n_end = limits.n < 0 ? g.n : limits.n;
  const std::int64_t k_end = limits.k < 0 ? g.k : limits.k;
  alignas(64) float tile[kRows * kPanel];
  // Steps of one value per matrix go into the tile (the attention scale: applied to each stored
  // run instead, q @ k^T of [8, 12, 512, 64] took 14.1 ms instead of 10.5); the others follow
  // each row's run.
  int ops[kMaxSteps];
  float values[kMaxSteps];
  const bool in_tile = g.num_steps <= kMaxSteps &&
                       std::all_of(g.steps, g.steps + g.num_steps, [](const DotRowsStep& s) {
                         return s.stride == 0 && s.vec_stride == 0;
                       });
  const int tile_steps = in_tile ? g.num_steps : 0;
  for (int s = 0; s < tile_steps; ++s) {
    ops[s] = g.steps[s].op;
    values[s] = g.steps[s].data[g.steps[s].batch_offsets ? g.steps[s].batch_offsets[batch] : 0];
  }
  for (std::int64_t t = 0; t < rows; t += kRows) {
    const std::int64_t height = std::min<std::int64_t>(kRows, rows - t);
    const float* rows_of_a = a + t * lda;
    std::int64_t tile_lda = lda;
    if (height < kRows) {  // the last rows: copied beside zero rows, whose sums are not stored
      padded.assign(static_cast<std::size_t>(kRows * g.k), 0.0f);
      for (std::int64_t r = 0; r < height; ++r)
        std::copy_n(rows_of_a + r * lda, g.k, padded.data() + r * g.k);
      rows_of_a = padded.data();
      tile_lda = g.k;
    }
    std::int64_t c0 = 0;
    for (; c0 < n_end; c0 += kPanel) {
      const float* panel = packed.data() + (c0 / kPanel) * kPanel * g.k;
      const std::int64_t width = std::min(kPanel, g.n - c0);
      const bool whole = height == kRows && width == kPanel;
      if (whole)  // straight into the result
        tile_sums(rows_of_a, tile_lda, panel, k_end, out + t * ldc + c0, ldc, ops, values,
                  tile_steps);
      else
        tile_sums(rows_of_a, tile_lda, panel, k_end, tile, kPanel, ops, values, tile_steps);
      for (std::int64_t r = 0; r < height; ++r) {
        float* dst = out + (t + r) * ldc + c0;
        if (!whole) std::copy_n(tile + r * kPanel, width, dst);
        if (!in_tile) apply_steps_to_run(g.steps, g.num_steps, dst, width, batch, r0 + t + r, c0);
      }
    }
    if (c0 < g.n)
      for (std::int64_t r = 0; r < height; ++r)
        std::fill(out + (t + r) * ldc + c0, out + (t + r) * ldc + g.n, 0.0f);
  }
}

// Floats as their bits, for tests the compiler vectorizes (a float compare with NaNs in mind it
// does one element at a time).
inline std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }
constexpr std::uint32_t kExponent = 0x7f800000u, kMagnitude = 0x7fffffffu;

// 1 + the last row of a packed b (k rows, `panels` panels) holding an infinity or a NaN, or 0.
std::int64_t rows_to_last_nonfinite(const std::vector<float>& packed, std::int64_t k,
                                    std::int64_t panels) {
  for (std::int64_t j = k - 1; j >= 0; --j) {
    std::uint32_t exponent = 0;  // the largest: all ones for an infinity or a NaN
    for (std::int64_t p = 0; p < panels; ++p) {
      const float* row = packed.data() + (p * k + j) * kPanel;
      for (std::int64_t c = 0; c < kPanel; ++c)
        exponent = std::max(exponent, bits(row[c]) & kExponent);
    }
    if (exponent == kExponent) return j + 1;
  }
  return 0;
}

// 1 + the last column holding a nonzero value (or a NaN) in any of `rows` rows of n values, or 0.
// Each row is scanned from its end down to the end found so far, a cache line at a time (a
// causal mask's zeros are half of the weights).
std::int64_t columns_to_last_nonzero(const float* values, std::int64_t rows, std::int64_t n) {
  constexpr std::int64_t kLine = 16;
  std::int64_t end = 0;
  for (std::int64_t r = 0; r < rows && end < n; ++r) {
    const float* row = values + r * n;
    std::int64_t c = n;
    while (c - end >= kLine) {
      std::uint32_t any = 0;
      for (std::int64_t i = c - kLine; i < c; ++i) any |= bits(row[i]) & kMagnitude;
      if (any) break;
      c -= kLine;
    }
    for (; c > end; --c)
      if (bits(row[c - 1]) & kMagnitude) {
        end = c;
        break;
      }
  }
  return end;
}

// Row r0 of matrix `batch` of g's a.
const float* a_rows(const RowProductArgs& g, std::int64_t batch, std::int64_t r0) {
  return g.a + (g.a_offsets ? g.a_offsets[batch] : 0) + r0 * g.a_row_stride;
}

// At least ~128K multiply-adds per thread, so a small product does not pay for a fork.
std::int64_t task_grain(std::int64_t multiply_adds_per_task) {
  return std::max<std::int64_t>(
      1, (std::int64_t{1} << 17) / std::max<std::int64_t>(multiply_adds_per_task, 1));
}

}  // namespace

void batched_gemm(const RowProductArgs& g) {
  const std::int64_t tasks_per_matrix = (g.m + kTaskRows - 1) / kTaskRows;
  // Ranges are contiguous per thread, so a thread packs each matrix's b once.
  parallel_for(g.batches * tasks_per_matrix, task_grain(kTaskRows * g.n * g.k), g.num_threads,
               [&](std::int64_t begin, std::int64_t end) {
                 std::vector<float> packed, padded;
                 std::int64_t packed_batch = -1;
                 for (std::int64_t t = begin; t < end; ++t) {
                   const std::int64_t batch = t / tasks_per_matrix;
                   const std::int64_t r0 = (t % tasks_per_matrix) * kTaskRows;
                   if (batch != packed_batch) {
                     pack_b(g, batch, packed);
                     packed_batch = batch;
                   }
                   task_rows(g, batch, r0, std::min(kTaskRows, g.m - r0), a_rows(g, batch, r0),
                             g.a_row_stride, g.out + (batch * g.m + r0) * g.n, g.n, packed, padded);
                 }
               });
}

// A task's rows go through the first product, the stage and the second product before the next
// task's: its two buffers of kTaskRows rows of first.n floats (96 KiB each at 512 columns) and
// the two packed b's of its matrix (128 KiB each for attention's k and v of 512 positions and 64
// channels) stay in the core's cache.
void batched_gemm_chain(const RowChainArgs& c) {
  const RowProductArgs &f = c.first, &s = c.second;
  const std::int64_t tasks_per_matrix = (f.m + kTaskRows - 1) / kTaskRows;
  parallel_for(f.batches * tasks_per_matrix, task_grain(kTaskRows * (f.n * f.k + s.n * s.k)),
               f.num_threads, [&](std::int64_t begin, std::int64_t end) {
                 std::vector<float> packed_first, packed_second, padded;
                 std::vector<float> scores(static_cast<std::size_t>(kTaskRows * f.n));
                 std::vector<float> weights(scores.size());
                 std::int64_t packed_batch = -1, nonfinite_rows = 0;
                 for (std::int64_t t = begin; t < end; ++t) {
                   const std::int64_t batch = t / tasks_per_matrix;
                   const std::int64_t r0 = (t % tasks_per_matrix) * kTaskRows;
                   const std::int64_t rows = std::min(kTaskRows, f.m - r0);
                   if (batch != packed_batch) {
                     pack_b(f, batch, packed_first);
                     pack_b(s, batch, packed_second);
                     nonfinite_rows =
                         rows_to_last_nonfinite(packed_second, s.k, (s.n + kPanel - 1) / kPanel);
                     packed_batch = batch;
                   }
                   // Columns the stage reads nothing of (a causal mask's) are not computed.
                   const std::int64_t asked =
                       c.columns ? c.columns(c.context, batch, r0, rows) : -1;
                   const std::int64_t columns = asked < 0 ? f.n : std::min(asked, f.n);
                   task_rows(f, batch, r0, rows, a_rows(f, batch, r0), f.a_row_stride,
                             scores.data(), f.n, packed_first, padded, {columns, -1});
                   c.stage(c.context, batch, r0, rows, scores.data(), weights.data());
                   // The weights' zero columns at the end (the masked positions) add nothing.
                   const std::int64_t k =
                       std::max(columns_to_last_nonzero(weights.data(), rows, f.n), nonfinite_rows);
                   task_rows(s, batch, r0, rows, weights.data(), f.n,
                             s.out + (batch * s.m + r0) * s.n, s.n, packed_second, padded, {-1, k});
                 }
               });
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
