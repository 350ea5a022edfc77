// The fused interpreter: runs a FusedProgram over L1-sized chunks of the iteration, one
// instruction at a time, through the eager kernels' own vectorized loops (so its results equal
// the unfused ones bit for bit). Used where no compiler exists, when STREAMFUSE_JIT=interpret,
// and while a kernel compiles.
#pragma once

#include <cstdint>
#include <span>

#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/layout.h"
#include "jit/program.h"
#include "jit/reduce_layout.h"

namespace streamfuse::jit {

// Computes `program` over `it`, whose operands are the program's inputs then its outputs
// (`operands` in the same order). scalars[i] is jit::scalar_bits of argument i.
void interpret(const FusedProgram& program, const backends::cpu::Iteration& it,
               std::span<const backends::cpu::Operand> operands,
               std::span<const std::int64_t> scalars, const backends::cpu::KernelTable& kernels,
               int num_threads);

// Computes `program`, which has a reduction anchor, over `layout` (jit/reduce_layout.h): operands
// as for interpret(), their strides in the layout's iteration. `hash` is its ProgramFacts hash:
// what its rows run is worked out once per thread and program.
void interpret_reduce(const FusedProgram& program, const ReduceLayout& layout,
                      std::span<const backends::cpu::Operand> operands,
                      std::span<const std::int64_t> scalars,
                      const backends::cpu::KernelTable& kernels, int num_threads,
                      std::uint64_t hash);

}  // namespace streamfuse::jit
