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
#include <memory>
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

// The vector of this ISA level: AVX-512 (32 registers: a tile of 6 x 4 vectors, 8 x 3 for
// gemm_one_b), AVX2 with FMA (16: 6 x 2), else one float at a time with std::fma (the same
// roundings, in software).
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kWidth = 16, kVectors = 4;
constexpr int kOneRows = 8, kOneVectors = 3;
inline Vec zero() { return _mm512_setzero_ps(); }
inline Vec load(const float* p) { return _mm512_loadu_ps(p); }
inline Vec splat(float x) { return _mm512_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kWidth = 8, kVectors = 2;
constexpr int kOneRows = 6, kOneVectors = 2;
inline Vec zero() { return _mm256_setzero_ps(); }
inline Vec load(const float* p) { return _mm256_loadu_ps(p); }
inline Vec splat(float x) { return _mm256_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
#else
using Vec = float;
constexpr int kWidth = 1, kVectors = 4;
constexpr int kOneRows = 6, kOneVectors = 4;
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

// gemm_one_b's tile and panel: 8 x 48 on AVX-512 (128-row products and 768, 2,304 and 3,072
// columns divide into them; 6 x 64 left a tile of 2 rows in every 48, and was 0-5% slower), and
// its task's rows.
constexpr std::int64_t kOnePanel = std::int64_t{kWidth} * kOneVectors;
constexpr std::int64_t kOneTaskRows = 48;
// At most this many rows (one task a panel) read b's rows where they are instead of packing
// them: a panel read by a few tiles does not pay for its pack (16-32 rows of a [768, 2304]
// weight took 1.2-1.35x oneDNN's time packed, 1.0-1.07x in place).
constexpr std::int64_t kInPlaceRows = kOneTaskRows;
static_assert(kOneTaskRows % kOneRows == 0);

// Lines of memory to bring to the core's L2 while a tile is summed, spread evenly over its k
// steps: `rows` runs of `lines` cache lines, run r starting at base + r * stride.
struct PrefetchLines {
  const float* base = nullptr;
  std::int64_t stride = 0, rows = 0, lines = 0;
};

// sums[r * ldc + c] = sum over j < k of a[r * lda + j] * panel[j * ldp + c], for r < R and
// c < V * kWidth: fused multiply-adds in order of j from 0, starting from +0 (so the first term is
// its product rounded once, and a product of -0 sums to +0). The tile's geometry changes which
// sums are computed together, never how one is.
//
// Steps of one value for the whole matrix (attention's scale), `count` of them, are applied to the
// sums in registers before they are stored: ops[s] 0 to 3 for + - * / with values[s].
//
// `ahead`'s lines are prefetched, spread evenly over the k steps. The steps between two
// prefetches run in a loop of their own: with the schedule's test in the loop over j, its
// counters took general registers from a's row pointers, which AVX2's 6 x 2 tile then reloaded
// from the stack at every step beside only 12 FMAs (40 GFLOPS on one core against oneDNN's 67).
template <int V = kVectors, int R = kRows>
void tile_sums(const float* __restrict a, std::int64_t lda, const float* __restrict panel,
               std::int64_t k, float* __restrict sums, std::int64_t ldc, const int* ops,
               const float* values, int count, const PrefetchLines& ahead = {},
               std::int64_t ldp = kPanel) {
  Vec acc[R][V];
  for (auto& row : acc)
    for (Vec& v : row) v = zero();
  const auto steps = [&](std::int64_t j0, std::int64_t j1) __attribute__((always_inline)) {
    for (std::int64_t j = j0; j < j1; ++j) {
      Vec b[V];
      for (int v = 0; v < V; ++v) b[v] = load(panel + j * ldp + v * kWidth);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const Vec x = splat(a[r * lda + j]);
        for (int v = 0; v < V; ++v) acc[r][v] = fma(x, b[v], acc[r][v]);
      }
    }
  };
  constexpr std::int64_t kLine = 64 / sizeof(float);
  const std::int64_t lines = ahead.rows * ahead.lines;
  std::int64_t j = 0;
  for (std::int64_t line = 0; line < lines; ++line) {
    const std::int64_t at = (line * k + lines - 1) / lines;  // before step ceil(line k / lines)
    if (at >= k) break;
    steps(j, at);
    j = at;
    __builtin_prefetch(
        ahead.base + (line / ahead.lines) * ahead.stride + (line % ahead.lines) * kLine, 0, 2);
  }
  steps(j, k);
  for (int s = 0; s < count; ++s) {
    const Vec x = splat(values[s]);
    for (auto& row : acc)
      for (Vec& v : row)
        v = ops[s] == 0 ? v + x : ops[s] == 1 ? v - x : ops[s] == 2 ? v * x : v / x;
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) store(sums + r * ldc + v * kWidth, acc[r][v]);
}

// tile_sums (its arguments after the height) of a tile of `height` rows, 1 to R, that sums only
// its own rows: rows copied beside zero rows made 8 rows of a linear layer on AVX2 (6 x 2
// vectors) compute 12.
template <int V, int R, class... TileArgs>
void tile_sums_of_height(std::int64_t height, const TileArgs&... args) {
  if constexpr (R > 1) {
    if (height < R) return tile_sums_of_height<V, R - 1>(height, args...);
  }
  tile_sums<V, R>(args...);
}

// Tiles of at most `most` rows over `rows` rows, of nearly equal heights (8 rows in tiles of 6:
// 4 and 4, not 6 and 2): fn(first row, height) for each.
template <class Fn>
void for_each_tile(std::int64_t rows, std::int64_t most, Fn&& fn) {
  const std::int64_t tiles = (rows + most - 1) / most;
  for (std::int64_t i = 0; i < tiles; ++i) {
    const std::int64_t first = rows * i / tiles;
    fn(first, rows * (i + 1) / tiles - first);
  }
}

// gemm_one_b's tile: `height` rows (1 to kOneRows) by the first `width` columns of a panel (at
// least 1), rounded up to whole vectors (a narrower last panel computes no more padding than a
// vector's).
template <int V = kOneVectors>
void one_b_tile(std::int64_t height, std::int64_t width, const float* a, std::int64_t lda,
                const float* panel, std::int64_t ldp, std::int64_t k, float* sums, std::int64_t ldc,
                const PrefetchLines& ahead) {
  if constexpr (V > 1) {
    if (width <= std::int64_t{V - 1} * kWidth)
      return one_b_tile<V - 1>(height, width, a, lda, panel, ldp, k, sums, ldc, ahead);
  }
  tile_sums_of_height<V, kOneRows>(height, a, lda, panel, k, sums, ldc,
                                   static_cast<const int*>(nullptr),
                                   static_cast<const float*>(nullptr), 0, ahead, ldp);
}

#if defined(__AVX512F__)
// out[i * ldo + r] = in[r * ldi + i] for r, i < 16: a 16 x 16 block transposed in registers
// (pairs of rows interleaved, then pairs of pairs, then 128-bit lanes twice).
void transpose16(const float* in, std::int64_t ldi, float* out, std::int64_t ldo) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(in + i * ldi);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xDD);
  }
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(out + i * ldo, r[i]);
}
#elif defined(__AVX2__)
// out[i * ldo + r] = in[r * ldi + i] for r, i < 8: an 8 x 8 block transposed in registers (pairs
// of rows interleaved, then pairs of pairs: columns i and i + 4 of four rows, then 128-bit lanes).
void transpose8(const float* in, std::int64_t ldi, float* out, std::int64_t ldo) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * ldi);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(out + i * ldo, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(out + (i + 4) * ldo, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

// Columns [c0, c0 + width) of a k-row matrix b (its rows `row_stride` apart, its columns
// `col_stride`) as k rows of `panel` floats, zero past width: the GEMMs' packed panels. Rows
// contiguous are copied a vector at a time; columns contiguous (k^T, x @ W^T) are transposed
// 16 x 16 in registers on AVX-512, 8 x 8 on AVX2 (one float at a time, gemm_one_b took 1.2-2x
// oneDNN's time at 128 rows of x @ W^T on AVX-512; in blocks, 0.98-1.06x).
void pack_columns(const float* b, std::int64_t row_stride, std::int64_t col_stride, std::int64_t k,
                  std::int64_t c0, std::int64_t width, std::int64_t panel, float* dst) {
  std::int64_t j = 0;
  if (col_stride == 1 && width == panel && panel % kWidth == 0) {
    for (; j < k; ++j)
      for (std::int64_t c = 0; c < panel; c += kWidth)
        store(dst + j * panel + c, load(b + j * row_stride + c0 + c));
    return;
  }
#if defined(__AVX512F__)
  if (row_stride == 1 && width == panel && panel % 16 == 0)
    for (; j + 16 <= k; j += 16)
      for (std::int64_t c = 0; c < panel; c += 16)
        transpose16(b + (c0 + c) * col_stride + j, col_stride, dst + j * panel + c, panel);
#elif defined(__AVX2__)
  if (row_stride == 1 && width == panel && panel % 8 == 0)
    for (; j + 8 <= k; j += 8)
      for (std::int64_t c = 0; c < panel; c += 8)
        transpose8(b + (c0 + c) * col_stride + j, col_stride, dst + j * panel + c, panel);
#endif
  for (; j < k; ++j) {
    float* row = dst + j * panel;
    const float* x = b + j * row_stride + c0 * col_stride;
    if (col_stride == 1)
      std::copy_n(x, width, row);
    else
      for (std::int64_t c = 0; c < width; ++c) row[c] = x[c * col_stride];
    std::fill(row + width, row + panel, 0.0f);
  }
}

// Matrix `batch`'s b as panels of kPanel columns (the batched GEMM's).
void pack_b(const RowProductArgs& g, std::int64_t batch, std::vector<float>& packed) {
  const std::int64_t panels = (g.n + kPanel - 1) / kPanel;
  packed.resize(static_cast<std::size_t>(panels * kPanel * g.k));
  const float* b = g.b + (g.b_offsets ? g.b_offsets[batch] : 0);
  for (std::int64_t p = 0; p < panels; ++p)
    pack_columns(b, g.b_row_stride, g.b_col_stride, g.k, p * kPanel,
                 std::min(kPanel, g.n - p * kPanel), kPanel, packed.data() + p * kPanel * g.k);
}

// Panel `p` of gemm_one_b's b (one matrix for every row).
void pack_panel(const RowProductArgs& g, std::int64_t p, float* dst) {
  pack_columns(g.b, g.b_row_stride, g.b_col_stride, g.k, p * kOnePanel,
               std::min(kOnePanel, g.n - p * kOnePanel), kOnePanel, dst);
}

// b's values of panel `p`, rows [j0, j1), as lines to prefetch: a tile of rows over one panel
// asks for its share of the next panel's, so that b is read from memory while the panel before
// it is computed (at 128 rows of a linear layer, reading the weights took a fifth of the
// product's time when the pack waited on them).
PrefetchLines panel_lines(const RowProductArgs& g, std::int64_t p, std::int64_t j0,
                          std::int64_t j1) {
  constexpr std::int64_t kLine = 64 / sizeof(float);
  const std::int64_t c0 = p * kOnePanel, width = std::min(kOnePanel, g.n - c0);
  if (g.b_col_stride != 1)  // columns contiguous: rows [j0, j1) of each column
    return {g.b + c0 * g.b_col_stride + j0, g.b_col_stride, width, (j1 - j0 + kLine - 1) / kLine};
  return {g.b + j0 * g.b_row_stride + c0, g.b_row_stride, j1 - j0, (width + kLine - 1) / kLine};
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
               const std::vector<float>& packed, Limits limits = {-1, -1}) {
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
  for_each_tile(rows, kRows, [&](std::int64_t t, std::int64_t height) {
    const float* rows_of_a = a + t * lda;
    std::int64_t c0 = 0;
    for (; c0 < n_end; c0 += kPanel) {
      const float* panel = packed.data() + (c0 / kPanel) * kPanel * g.k;
      const std::int64_t width = std::min(kPanel, g.n - c0);
      const bool whole = width == kPanel;  // straight into the result
      tile_sums_of_height<kVectors, kRows>(height, rows_of_a, lda, panel, k_end,
                                           whole ? out + t * ldc + c0 : tile, whole ? ldc : kPanel,
                                           ops, values, tile_steps);
      for (std::int64_t r = 0; r < height; ++r) {
        float* dst = out + (t + r) * ldc + c0;
        if (!whole) std::copy_n(tile + r * kPanel, width, dst);
        if (!in_tile) apply_steps_to_run(g.steps, g.num_steps, dst, width, batch, r0 + t + r, c0);
      }
    }
    if (c0 < g.n)
      for (std::int64_t r = 0; r < height; ++r)
        std::fill(out + (t + r) * ldc + c0, out + (t + r) * ldc + g.n, 0.0f);
  });
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
                 std::vector<float> packed;
                 std::int64_t packed_batch = -1;
                 for (std::int64_t t = begin; t < end; ++t) {
                   const std::int64_t batch = t / tasks_per_matrix;
                   const std::int64_t r0 = (t % tasks_per_matrix) * kTaskRows;
                   if (batch != packed_batch) {
                     pack_b(g, batch, packed);
                     packed_batch = batch;
                   }
                   task_rows(g, batch, r0, std::min(kTaskRows, g.m - r0), a_rows(g, batch, r0),
                             g.a_row_stride, g.out + (batch * g.m + r0) * g.n, g.n, packed);
                 }
               });
}

// One b for every matrix (a linear layer). A task is one panel of b's columns by kOneTaskRows
// rows of a matrix, ordered panel by panel: a thread packs each panel of its contiguous range once
// and runs every row over it while it is in its core's cache, while the next panel's b is
// prefetched. (The batched GEMM's order, a task of rows over all of b, streams all of b from
// memory once per six rows: 1.5-2x oneDNN's time at 128 rows of a linear layer. Packing groups
// of two or four panels at a time was 0-10% slower than one; packing the next panel a share per
// tile, instead of prefetching it, 15% slower.)
void gemm_one_b(const RowProductArgs& g) {
  const std::int64_t panels = (g.n + kOnePanel - 1) / kOnePanel;
  const std::int64_t tasks_per_matrix = (g.m + kOneTaskRows - 1) / kOneTaskRows;
  const std::int64_t row_tasks = g.batches * tasks_per_matrix;
  const std::int64_t total_rows = g.batches * g.m;
  parallel_for(panels * row_tasks, task_grain(kOneTaskRows * kOnePanel * g.k), g.num_threads,
               [&](std::int64_t begin, std::int64_t end) {
                 // Made at the first pack (few rows read b in place and pack none); the pack
                 // writes every float of it.
                 std::unique_ptr<float[]> panel;
                 alignas(64) float tile[kOneRows * kOnePanel];
                 std::int64_t packed = -1;
                 for (std::int64_t t = begin; t < end; ++t) {
                   const std::int64_t p = t / row_tasks, c0 = p * kOnePanel;
                   const std::int64_t width = std::min(kOnePanel, g.n - c0);
                   const std::int64_t batch = (t % row_tasks) / tasks_per_matrix;
                   const std::int64_t r0 = (t % tasks_per_matrix) * kOneTaskRows;
                   // (A narrower last panel is packed: its vectors would read past b's rows.)
                   const bool in_place =
                       g.b_col_stride == 1 && total_rows <= kInPlaceRows && width == kOnePanel;
                   if (p != packed && !in_place) {
                     if (!panel) panel.reset(new float[static_cast<std::size_t>(kOnePanel * g.k)]);
                     pack_panel(g, p, panel.get());
                     packed = p;
                   }
                   const float* b = in_place ? g.b + c0 : panel.get();
                   const std::int64_t ldp = in_place ? g.b_row_stride : kOnePanel;
                   const std::int64_t rows = std::min(kOneTaskRows, g.m - r0);
                   for_each_tile(rows, kOneRows, [&](std::int64_t first, std::int64_t height) {
                     const std::int64_t r = r0 + first;
                     // The next panel's b, a share per tile of rows over this panel's.
                     const std::int64_t q = batch * g.m + r;
                     const PrefetchLines ahead = p + 1 < panels
                                                     ? panel_lines(g, p + 1, g.k * q / total_rows,
                                                                   g.k * (q + height) / total_rows)
                                                     : PrefetchLines{};
                     float* out = g.out + (batch * g.m + r) * g.n + c0;
                     const bool whole = width == kOnePanel;
                     one_b_tile(height, width, a_rows(g, batch, r), g.a_row_stride, b, ldp, g.k,
                                whole ? out : tile, whole ? g.n : kOnePanel, ahead);
                     for (std::int64_t row = 0; row < height; ++row) {
                       float* dst = out + row * g.n;
                       if (!whole) std::copy_n(tile + row * kOnePanel, width, dst);
                       apply_steps_to_run(g.steps, g.num_steps, dst, width, batch, r + row, c0);
                     }
                   });
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
                 std::vector<float> packed_first, packed_second;
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
                             scores.data(), f.n, packed_first, {columns, -1});
                   c.stage(c.context, batch, r0, rows, scores.data(), weights.data());
                   // The weights' zero columns at the end (the masked positions) add nothing.
                   const std::int64_t k =
                       std::max(columns_to_last_nonzero(weights.data(), rows, f.n), nonfinite_rows);
                   task_rows(s, batch, r0, rows, weights.data(), f.n,
                             s.out + (batch * s.m + r0) * s.n, s.n, packed_second, {-1, k});
                 }
               });
}

}  // namespace streamfuse::backends::cpu::SF_ISA_NS
