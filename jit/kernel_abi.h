// The calling conventions of compiled CPU kernels. The generated source declares the same
// signatures and struct in plain C types (jit/cpp_codegen.cpp, jit/cpp_reduce_codegen.cpp).
#pragma once

namespace streamfuse::jit {

// Computes flat indices [begin, end) of the launch's iteration:
// - data[k]: element 0 of operand k (inputs, then outputs);
// - sizes[d]: the merged iteration sizes, outermost first (rank of the specialization key);
// - strides[k * rank + d]: operand k's element stride along d (read only for kArgument dims);
// - scalars[i]: scalar argument i (jit::scalar_bits: float bits in the low half, or integers).
// Threads call it on disjoint ranges.
extern "C" {
typedef void (*CpuKernelFn)(char* const* data, const long long* sizes, const long long* strides,
                            const long long* scalars, long long begin, long long end);

// A kernel with a reduction anchor (jit/reduce_layout.h): the iteration's dimensions are the
// rows' (outer) ones then the reduced (inner) ones, sizes and strides as above. What a call
// computes is its mode:
// - kWholeRows: rows [row_begin, row_end), every stage and every output;
// - kStageBlocks: the accumulators of blocks [begin, end) of stage `stage` of row row_begin,
//   into partials (stored at their block index), with the earlier stages' results in results;
// - kMergeStage: stage `stage` of row row_begin from the accumulators of all its blocks in
//   partials: its result into results[stage];
// - kOutputs: the per-element outputs of elements [begin, end) of row row_begin from results
//   (and its per-row outputs too when begin is 0);
// - kColumnRows: rows [row_begin, row_end) as kWholeRows computes them, walked by tiles of up to
//   kColumnTile consecutive rows (along the innermost outer dimension), one element of each row
//   per step along the axis (jit/reduce_layout.h's ReduceWalk::kColumns: every stage folds in
//   order, lanes all 0).
// Threads call it on disjoint rows, blocks or elements.
enum CpuReduceMode {
  kWholeRows = 0,
  kStageBlocks = 1,
  kMergeStage = 2,
  kOutputs = 3,
  kColumnRows = 4
};
struct CpuReduceLaunch {
  char* const* data;
  const long long* sizes;
  const long long* strides;
  const long long* scalars;
  const int* lanes;  // per stage: whether the unfused reduction folds it in lanes
  long long n;       // elements per row
  long long row_begin, row_end;
  long long begin, end;
  int mode;
  int stage;
  void* partials;      // kCpuReduceAccBytes per block
  long long* results;  // per stage: its result's bits (as scalars are passed)
};
typedef void (*CpuReduceKernelFn)(const CpuReduceLaunch* launch);
}

// Bytes of one block accumulator in CpuReduceLaunch::partials (the widest: argmax's value and
// index).
inline constexpr int kCpuReduceAccBytes = 16;

// Rows a kColumnRows step walks together (a tile's values of one step: 1 KiB of f32). Each
// step costs its loop's overhead and a jump of a stride along the axis: tiles of 64 rows made a
// fused `x - mean(x, 0)` on [32768, 512] 1.1x the unfused ops' time, 256 make it 0.9x
// (bench/README.md "Column reductions").
inline constexpr int kColumnTile = 256;
// ... and where a thread's share of the walk is at most kColumnTileSmallElements (1 MiB of f32,
// the L2 of the machines measured), kColumnTileSmall: with tiles of 256, a fused x - mean(x, 0)
// on [512, 300] took 1.4-3x the unfused ops' time, with 64 1.07x (bench/README.md "Column
// reductions").
inline constexpr int kColumnTileSmall = 64;
inline constexpr long long kColumnTileSmallElements = 262144;

}  // namespace streamfuse::jit
