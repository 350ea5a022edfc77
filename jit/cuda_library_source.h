// CUDA C++ of the kernels a CUDA device runs that are not FusedPrograms: arange(), rand() and
// randn() (the CPU's values: the same Philox4x32-10 counters and Box-Muller math), reductions and
// integer matrix products. Each source holds one kernel family for one op kind and dtype, is
// compiled by NVRTC after the kernel prelude (cuda_kernel_prelude()) and launched with one
// argument struct, as generated element-wise kernels are.
//
// The structs below are what the host passes; the generated sources declare the same layouts.
#pragma once

#include <cstdint>
#include <string>

#include "core/ir.h"
#include "jit/cuda_kernel_abi.h"
#include "streamfuse/dtype.h"

namespace streamfuse::jit {

// arange: out[i] = start + i * step, in int64 (integral scalars) or double, as the CPU computes.
struct CudaArangeArgs {
  void* out;
  long long numel;
  long long start_i, step_i;
  double start_d, step_d;
};
// `<name>` over a grid-stride loop.
std::string cuda_arange_source(DType out, bool integral, const std::string& name);

// rand / randn: element i is lane i % 4 of Philox counter offset + i / 4 under `seed`.
struct CudaRandomArgs {
  void* out;
  long long numel;
  unsigned long long seed, offset;
  double a, b;  // [low, high) or (mean, std)
};
std::string cuda_random_source(core::OpKind kind, DType out, const std::string& name);

// A reduction: each of `outputs` results folds `len` elements, in the order of the accumulator
// template the CPU's eager kernel instantiates (core/reduce_math.h), so the values are the CPU's
// bit for bit. Output o is the row-major index over the kept dimensions; reduced element r the
// row-major index over the reduced ones (for argmax, the index it returns), laid out by the
// reduced dimensions as the CPU kernel merges them: runs along the last.
struct CudaReduceArgs {
  const void* in;
  void* out;
  void* partial;  // outputs * blocks * slots accumulators, for <name>_parts and <name>_combine
  long long kept_rank, kept_sizes[8], kept_strides[8];
  long long reduced_rank, reduced_sizes[8], reduced_strides[8];
  long long outputs, len;
  long long blocks;  // sf_reduce_blocks(len)
  long long slots;   // per block: SF_REDUCE_LANES where the reduced elements are contiguous, else 1
};
// Three kernels: `<name>_rows` (a thread per output folds it whole: many outputs or short rows),
// `<name>_parts` (a thread per output, block and slot: a block's accumulator, or one lane of a
// contiguous block) and `<name>_combine` (a thread per output merges its parts in order).
std::string cuda_reduce_source(core::OpKind kind, DType in, DType out, const std::string& name);
// Bytes of one partial accumulator of a reduction of `kind` over dtype `in`.
std::size_t cuda_reduce_accumulator_bytes(core::OpKind kind, DType in);

// An integer matrix product with wrapping arithmetic, a thread per output element.
struct CudaIntMatmulArgs {
  const void* a;
  const void* b;
  void* out;
  long long batch_rank, batch[8], a_batch_strides[8], b_batch_strides[8];
  long long m, k, n;
  long long a_row_stride, a_col_stride, b_row_stride, b_col_stride;
};
std::string cuda_int_matmul_source(DType dtype, const std::string& name);

// index_select and gather (core/ir.h) of a contiguous x and indices into a contiguous out, a
// thread per output element moving `element_bytes` bytes. IndexSelect uses outer / axis_size /
// count / inner (backends/index_layout.h); Gather the index's shape (`rank` sizes), x's
// contiguous strides and axis_size. An index outside [0, axis_size) leaves its element unwritten
// and sets *bad to 1.
struct CudaIndexArgs {
  const void* x;
  const void* indices;
  void* out;
  int* bad;
  long long numel;
  long long outer, axis_size, count, inner;
  long long rank, axis, sizes[8], x_strides[8];
};
std::string cuda_index_source(core::OpKind kind, std::size_t element_bytes, DType index_dtype,
                              const std::string& name);

// cumsum and argsort (core/ir.h) of a contiguous x: a thread per line along the axis, in the
// CPU's order (backends/cpu/scan_ops.cpp), so the results are the CPU's bit for bit. argsort
// merge-sorts the line's positions bottom-up, stably, through `a` and `b` (lines x size each).
struct CudaScanArgs {
  const void* x;
  void* out;
  long long* a;
  long long* b;
  long long outer, size, inner;
  long long descending;
};
std::string cuda_scan_source(core::OpKind kind, DType in, DType out, const std::string& name);

// conv2d, max_pool2d and avg_pool2d (core/ir.h) of a contiguous x ([n, c, h, w]; conv2d's
// weight [o, c / groups, kh, kw]) into a contiguous out [n, o, oh, ow] (pools: o = c), a thread
// per output element. Pools run the CPU's arithmetic (backends/cpu/pool_ops.cpp) and give its
// bits; conv2d accumulates in f32 over (channel, kh, kw) in order, a direct loop that does not
// match oneDNN's summation order bit for bit.
// scatter and scatter_add (core/ir.h) of a contiguous index and src into out (x's handle: any
// strides), a thread per line of the index along the axis, its elements in order
// (backends/cpu/scatter_ops.cpp's order, so the CPU's bits). An index outside [0, axis_size)
// leaves its element unwritten and sets *bad to 1.
struct CudaScatterArgs {
  const void* index;
  const void* src;
  void* out;
  int* bad;
  long long lines, line_size, rank, axis, axis_size;
  long long index_sizes[8], index_strides[8], src_strides[8], out_strides[8];
};
std::string cuda_scatter_source(core::OpKind kind, DType dtype, DType index_dtype,
                                const std::string& name);

struct CudaWindowArgs {
  const void* x;
  const void* w;
  void* out;
  long long numel;
  long long n, c, h, w_size, o, oh, ow;
  long long kh, kw, sh, sw, ph, pw, dh, dw, groups, count_include_pad;
};
std::string cuda_window_source(core::OpKind kind, DType dtype, const std::string& name);

}  // namespace streamfuse::jit
