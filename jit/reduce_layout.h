// How a launch of a program with a reduction anchor walks its tensors, and how its work is split
// over threads; shared by the interpreter and compiled kernels, on every device.
//
// The iteration shape splits into rows: with an axis, the other dimensions (outer) index rows
// and the axis (inner) runs along one; with every element reduced, one row of all of them in
// row-major order. The layout's iteration holds the outer dimensions (merged where every operand
// allows) then the inner ones, each operand with its strides, so element j of row r of operand k
// lies at the row's outer offset plus the inner offset of j.
#pragma once

#include <cstdint>
#include <span>

#include <boost/container/small_vector.hpp>

#include "backends/cpu/kernels/layout.h"
#include "jit/launcher.h"
#include "jit/program.h"

namespace streamfuse::jit {

// How a launch walks memory:
// - kRows: a row at a time, along the axis: every operand is adjacent (or broadcast) along it;
// - kColumns: tiles of consecutive rows at a time, one element of each per step along the axis
//   (kColumnRows): the rows are strided along the axis (every stage folds in order, as the
//   unfused reduction of such a row does) and consecutive rows are adjacent (or broadcast) in
//   every operand, so a step reads and writes contiguous memory;
// - kStrided: neither (a row at a time, reading a cache line per element: the ops are better
//   run one by one).
enum class ReduceWalk : std::uint8_t { kRows, kColumns, kStrided };

struct ReduceLayout {
  backends::cpu::Iteration it;  // outer dimensions, then inner ones
  int outer_rank = 0;
  int inner_rank = 1;
  std::int64_t rows = 0;  // positions of the reduced shape
  std::int64_t n = 0;     // elements per row
  // Per stage: whether the unfused reduction folds it in lanes (it reads the stage's values from
  // adjacent memory: a tensor made by the segment, contiguous, or an input that is).
  boost::container::small_vector<int, 8> lanes;
  ReduceWalk walk = ReduceWalk::kRows;
};

// The layout of `program` over `shape`, its operands (inputs then outputs) with their strides
// broadcast to `shape`.
ReduceLayout make_reduce_layout(const FusedProgram& program, const Shape& shape,
                                std::span<const backends::cpu::Operand> operands);

// Whether `program` over `shape` walks memory as well as its ops run one by one would
// (ReduceWalk::kRows or kColumns) with these inputs and its outputs laid out as the reduce
// optimization allocates them (contiguous; per-row ones as the reduced shape).
// `hash`: the program's (ProgramFacts::hash); the layout is the one the launch then finds made
// (jit/reduce_launch_memo.h).
bool reduce_walks_well(const FusedProgram& program, std::uint64_t hash, const Shape& shape,
                       std::span<const LaunchOperand> inputs);

// The input whose load stage k reduces as it is (the unfused reduction reads that tensor in its
// own layout), or -1 when the stage reduces a value the program computes.
int stage_input_load(const FusedProgram& program, std::size_t k);

// The four things a reduction kernel does (jit/kernel_abi.h's CpuReduceMode), as the interpreter
// or a compiled kernel does them.
class ReduceExecutor {
 public:
  virtual ~ReduceExecutor() = default;
  virtual void whole_rows(std::int64_t row_begin, std::int64_t row_end) = 0;
  virtual void stage_blocks(std::int64_t row, int stage, std::int64_t begin, std::int64_t end,
                            void* partials, const std::int64_t* results) = 0;
  virtual void merge_stage(std::int64_t row, int stage, const void* partials,
                           std::int64_t* results) = 0;
  virtual void outputs(std::int64_t row, std::int64_t begin, std::int64_t end,
                       const std::int64_t* results) = 0;
  // Rows [row_begin, row_end) by column tiles (ReduceWalk::kColumns): every stage and output.
  virtual void column_rows(std::int64_t row_begin, std::int64_t row_end) = 0;
};

// Runs a launch over `num_threads`: whole rows (or column tiles of rows) per thread, or, for
// fewer rows than threads that are long, each row's blocks over the threads stage by stage
// (merged in block order, so the result is the same either way) and its outputs over the threads.
void run_reduce(const ReduceLayout& layout, std::size_t num_stages, int num_threads,
                ReduceExecutor& executor);

}  // namespace streamfuse::jit
