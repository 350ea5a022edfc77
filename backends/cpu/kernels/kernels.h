// The CPU kernels' entry points and their arguments. The kernel sources are compiled once per
// ISA level (cmake/CpuIsa.cmake) into namespaces isa_v2, isa_v3, isa_v4; isa.h picks a table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/ir.h"
#include "streamfuse/dtype.h"
#include "streamfuse/shape.h"

namespace streamfuse::backends::cpu {

using Strides = std::array<std::int64_t, kMaxRank>;

// A tensor as a kernel sees it: its first element, dtype, and element strides over the shape the
// kernel iterates (0 where it broadcasts).
struct Operand {
  char* data = nullptr;
  DType dtype = kF32;
  Strides strides{};
};

// One element-wise op: out = kind(inputs...) over `shape`. Inputs are read as `compute`
// (f16/bf16 compute in float); the scalar operand, if any, is already one of the inputs, a
// broadcast 1-element operand.
struct ElementwiseArgs {
  core::OpKind kind = core::OpKind::kAdd;
  DType compute = kF32;
  Shape shape;
  int num_inputs = 0;
  std::array<Operand, 3> inputs;
  Operand output;
  int num_threads = 1;
};

// Copies `src` to `dst` over `shape`, converting dtypes (bitwise when they are equal).
struct CopyArgs {
  Shape shape;
  Operand src;
  Operand dst;
  int num_threads = 1;
};

// out = full(value) or arange(start, step) over a contiguous output of `numel` elements.
struct FillArgs {
  core::OpKind kind = core::OpKind::kFull;  // Full or Arange
  DType dtype = kF32;
  void* out = nullptr;
  std::int64_t numel = 0;
  Scalar value;  // Full: the value; Arange: start
  Scalar step;   // Arange
  int num_threads = 1;
};

// Philox random values into a contiguous output.
struct RandomArgs {
  core::OpKind kind = core::OpKind::kRandUniform;  // RandUniform or RandNormal
  DType dtype = kF32;
  void* out = nullptr;
  std::int64_t numel = 0;
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;  // in Philox counters
  double a = 0, b = 1;       // [low, high) or (mean, std)
  int num_threads = 1;
};

// A reduction of `input` (of `shape`) over `axis` (or all, stream::kAllAxes) into a contiguous
// output holding the kept dimensions in order.
struct ReduceArgs {
  core::OpKind kind = core::OpKind::kSum;
  Shape shape;
  Operand input;
  int axis = core::kAllAxes;
  DType out_dtype = kF32;
  void* out = nullptr;
  int num_threads = 1;
};

// Matrix products that are dot products of contiguous rows with contiguous vectors, f32: for
// each of `batches` matrices i and each of its `vectors` vectors v,
// out[(i * vectors + v) * count + r] = sum over j < k of
// rows[rows_offsets[i] + r * row_stride + j] * vec[vec_offsets[i] + v * vec_stride + j] (offsets
// in elements; null offsets are all 0). A decode step's products with a transposed weight are
// this with one vector (x @ W^T, the tied head of a language model): memory-bound, and oneDNN's
// GEMM reads such weights at about two thirds of the machine's bandwidth; a short prompt's
// attention scores (q @ k^T, a few rows of q) are this with a few. Each sum runs in one fixed
// order, the same on every ISA level and thread count and for any number of vectors: element j
// into lane j % 64 (a product, then a sum: two roundings), then the lanes halved as a tree.
// A step applied to each result as it is stored (the matmul builder's steps, in order):
// result = result <op> operand, op 0 to 3 for + - * /, each rounded to f32 as the element-wise op
// rounds it. The operand of result r of vector v of matrix `batch` is
// data[batch_offsets[batch] + v * vec_stride + r * stride] (batch_offsets null: 0).
struct DotRowsStep {
  int op = 0;
  const float* data = nullptr;
  const std::int64_t* batch_offsets = nullptr;
  std::int64_t stride = 0;
  std::int64_t vec_stride = 0;
};

struct DotRowsArgs {
  const float* rows = nullptr;
  const std::int64_t* rows_offsets = nullptr;
  std::int64_t row_stride = 0;
  std::int64_t count = 0;  // rows per matrix
  const float* vec = nullptr;
  const std::int64_t* vec_offsets = nullptr;
  std::int64_t vectors = 1;  // per matrix
  std::int64_t vec_stride = 0;
  std::int64_t k = 0;
  std::int64_t batches = 1;
  float* out = nullptr;
  int num_threads = 1;
  const DotRowsStep* steps = nullptr;
  int num_steps = 0;
};

// A batched f32 product of matrices that each have their own b, for the library's own kernels
// below: for each of `batches` matrices i, row r < m and column c < n,
// out[(i * m + r) * n + c] = sum over j < k of a[a_offsets[i] + r * a_row_stride + j *
// a_col_stride]
// * b[b_offsets[i] + j * b_row_stride + c * b_col_stride] (offsets in elements; null offsets are
// all 0). Steps as DotRowsStep, result c of row r: data[batch_offsets[batch] + r * vec_stride +
// c * stride].
struct RowProductArgs {
  const float* a = nullptr;
  const std::int64_t* a_offsets = nullptr;
  std::int64_t a_row_stride = 0, a_col_stride = 1;
  const float* b = nullptr;
  const std::int64_t* b_offsets = nullptr;
  std::int64_t b_row_stride = 0, b_col_stride = 1;
  std::int64_t m = 0, k = 0, n = 0;
  std::int64_t batches = 1;
  float* out = nullptr;
  int num_threads = 1;
  const DotRowsStep* steps = nullptr;
  int num_steps = 0;
};

// combine_rows: a few rows of weights (a) combining b's rows, which are contiguous (b_col_stride
// 1). Attention's att @ v while decoding (one row of weights per head, v a view of the cache) and
// for a short prompt: oneDNN runs these through its GEMM driver, which generates its kernels the
// first time it runs (20-25 ms) and makes a primitive per context length. Each result is summed
// over j in order (a product, then a sum: two roundings), the same on every ISA level and thread
// count.
//
// batched_gemm: more rows than the few-row kernels take, a's rows contiguous (a_col_stride 1):
// attention's q @ k^T and att @ v over a prompt or a sequence. Each result is a chain of fused
// multiply-adds over j in order from 0, starting from +0 (one rounding per term), the same on
// every ISA level (v2 has no FMA instruction and computes it in software: correct, slow, not
// routed to) and thread count. oneDNN ran these through its GEMM driver too (21-24 ms in every
// fresh process).

// gemm_one_b: batched_gemm's sums (the same bits) for one b shared by every matrix (b_offsets
// null): linear layers, x @ W over [batch..., rows, features], W's rows or columns contiguous.
// It runs b a panel of columns at a time over all of a's rows, so each panel is packed once per
// thread and stays in cache; the bits depend on nothing but the operands (not on the rows, the
// batch or the threads), and no kernel is generated per shape as oneDNN's are.

// Two batched GEMMs (batched_gemm above) with a row-wise stage between them, tile by tile:
// attention's q @ k^T, softmax and att @ v. For each matrix i and tile of rows, `first`'s rows go
// into a buffer, `stage` turns them into rows of second's a (both buffers contiguous, first.n
// floats a row, in cache), and second's rows are stored: neither intermediate is written to
// memory. first.out and second.a, a_offsets, a_row_stride are unused (the buffers stand in);
// second.k == first.n, second.m == first.m, the same batches. Each result is the one the three
// computed one after the other would store, on every thread count. The second product's sums
// stop at the last nonzero weight of a task's rows where the rest of v's rows are finite (the
// terms after it would each add a zero).
struct RowChainArgs {
  RowProductArgs first, second;
  // Rows [row, row + count) of matrix `matrix`: `in` as first stored them, into `out`. Called
  // from several threads at once, on disjoint rows.
  void (*stage)(const void* context, std::int64_t matrix, std::int64_t row, std::int64_t count,
                const float* in, float* out) = nullptr;
  // Null, or how many of first's columns (from the first) those rows' stage depends on (negative:
  // all): the others are not computed (zeros stand in for them). A causal mask's rows need fewer
  // than n.
  std::int64_t (*columns)(const void* context, std::int64_t matrix, std::int64_t row,
                          std::int64_t count) = nullptr;
  const void* context = nullptr;
};

struct Iteration;  // layout.h

// One op over n contiguous values of its compute type (stream::OpKind semantics, as the eager
// kernel computes it): in[j] points at operand j's n values, out at n results.
using ChunkFn = void (*)(const void* const* in, void* out, std::int64_t n);

// One reduction's fold (core/reduce_math.h's sf_reduce_fold and accumulator) over values fed in
// pieces, type-erased for the fused interpreter: its state lives in kFoldStateBytes of raw
// memory, an accumulator in kFoldAccBytes.
inline constexpr std::size_t kFoldStateBytes = 512;
inline constexpr std::size_t kFoldAccBytes = 16;
struct FoldFns {
  void (*begin)(void* state, int lanes, std::int64_t n, std::int64_t index0);
  // Folds the next m values, contiguous, of the compute type the fold was chosen for.
  void (*push)(void* state, const void* values, std::int64_t m);
  void (*result)(const void* state, void* acc);
  void (*identity)(void* acc);
  void (*merge)(void* acc, const void* part);
  // The reduction's result from its accumulator over `count` elements, as 64 bits (a float's
  // bits in the low half, integers as they are: sf_reduce_bits).
  std::int64_t (*finish)(const void* acc, std::int64_t count);
  // The same for `count` reductions side by side, each folding its values in order (column
  // tiles): accs is an array of accumulators (at most kFoldAccBytes each, of the fold's own
  // type), values one value per accumulator, index the values' position in their reductions.
  void (*column_identity)(void* accs, std::int64_t count);
  void (*column_step)(void* accs, const void* values, std::int64_t count, std::int64_t index);
  void (*column_merge)(void* accs, const void* parts, std::int64_t count);
  void (*column_finish)(const void* accs, std::int64_t count, std::int64_t n, std::int64_t* out);
  // `count` rows of n values each (n at most a block), one after another in `values`, each
  // folded on its own as a row of one block is (begin with `lanes`, push, result, merged into
  // the identity, finish): results[t * stride] is row t's result. One call for a batch of
  // short rows instead of six per row.
  void (*rows)(const void* values, std::int64_t count, std::int64_t n, int lanes,
               std::int64_t* results, std::int64_t stride);
};

// The pieces of the eager element-wise kernel, for the fused interpreter: the same loops, so
// fused results equal unfused ones bit for bit. Compute types are named by the dtype whose
// storage they are (f32, i32, i64, bool).
struct ChunkOps {
  // The loop of `kind` over operands read as `compute` (ElementwiseArgs::compute); null if none.
  ChunkFn (*op)(core::OpKind kind, DType compute);
  // Operand k of `it`, flat elements [lo, lo + n), converted to `as`, into buf.
  void (*gather)(const Iteration& it, const Operand& operand, int k, DType as, std::int64_t lo,
                 std::int64_t n, void* buf);
  // The inverse: n values of `from` in buf, converted to the operand's dtype and stored.
  void (*scatter)(const Iteration& it, const Operand& operand, int k, DType from, std::int64_t lo,
                  std::int64_t n, const void* buf);
  // n values converted between compute types (saturating, wrapping, != 0 as convert.h does).
  void (*convert)(DType from, DType to, const void* in, void* out, std::int64_t n);
  // n values rounded in place to dtype `to`: floats to the f16 or bf16 grid, int32s wrapped to
  // i8 or u8.
  void (*round)(DType to, void* values, std::int64_t n);
  // The fold of reduction `kind` (sum, mean, max, min, argmax) over values of `compute`, as the
  // eager reduction folds them; null if none.
  const FoldFns* (*fold)(core::OpKind kind, DType compute);
};

struct KernelTable {
  const char* isa;  // "x86-64-v4", ...
  void (*elementwise)(const ElementwiseArgs&);
  void (*copy)(const CopyArgs&);
  void (*fill)(const FillArgs&);
  void (*random)(const RandomArgs&);
  void (*reduce)(const ReduceArgs&);
  void (*dot_rows)(const DotRowsArgs&);
  void (*combine_rows)(const RowProductArgs&);
  void (*batched_gemm)(const RowProductArgs&);
  void (*batched_gemm_chain)(const RowChainArgs&);
  void (*gemm_one_b)(const RowProductArgs&);
  ChunkOps chunk;
};

}  // namespace streamfuse::backends::cpu
