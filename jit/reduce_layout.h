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
#include "jit/program.h"

namespace streamfuse::jit {

struct ReduceLayout {
  backends::cpu::Iteration it;  // outer dimensions, then inner ones
  int outer_rank = 0;
  int inner_rank = 1;
  std::int64_t rows = 0;  // positions of the reduced shape
  std::int64_t n = 0;     // elements per row
  // Per stage: whether the unfused reduction folds it in lanes (it reads the stage's values from
  // adjacent memory: a tensor made by the segment, contiguous, or an input that is).
  boost::container::small_vector<int, 8> lanes;
};

// The layout of `program` over `shape`, its operands (inputs then outputs) with their strides
// broadcast to `shape`.
ReduceLayout make_reduce_layout(const FusedProgram& program, const Shape& shape,
                                std::span<const backends::cpu::Operand> operands);

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
};

// Runs a launch over `num_threads`: whole rows per thread, or, for fewer rows than threads that
// are long, each row's blocks over the threads stage by stage (merged in block order, so the
// result is the same either way) and its outputs over the threads.
void run_reduce(const ReduceLayout& layout, std::size_t num_stages, int num_threads,
                ReduceExecutor& executor);

}  // namespace streamfuse::jit
