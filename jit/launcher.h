// KernelLauncher: runs a FusedProgram over tensors of one device, as a compiled kernel when one
// is ready and through the interpreter otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "backends/backend.h"
#include "jit/program.h"

namespace streamfuse::jit {

struct LaunchOperand {
  const backends::TensorHandle* handle = nullptr;
  Shape shape;  // inputs broadcast to the launch shape; outputs have it
  DType dtype = kF32;
};

// A reduction kernel's launch (row_kernel()) computed a few of its rows at a time, some of its
// operands read from or written to buffers that hold only those rows: the middle of a chain of
// products (backends::Backend::execute_product_chain), whose intermediates never reach memory.
class RowKernel {
 public:
  virtual ~RowKernel() = default;
  // Rows [row, row + count) of the launch (rows as the reduction's result numbers them), exactly
  // as launch() computes them. buffers[i] holds operand buffered[i]'s elements of those rows,
  // contiguous, row after row (written there for an output). Safe to call from several threads
  // at once on disjoint rows; never throws.
  virtual void rows(std::int64_t row, std::int64_t count,
                    std::span<char* const> buffers) const noexcept = 0;
};

class KernelLauncher {
 public:
  virtual ~KernelLauncher() = default;
  // Computes `program` over `shape`. scalars[i] is jit::scalar_bits of argument i. A launcher
  // that may_fail() throws Error when the kernel cannot be built; the others interpret instead.
  virtual void launch(const FusedProgram& program, const ProgramFacts& facts, const Shape& shape,
                      std::span<const LaunchOperand> inputs, std::span<const LaunchOperand> outputs,
                      std::span<const std::int64_t> scalars) = 0;

  // Whether running the program's ops one by one is faster now than launch() with these
  // arguments would be. The CPU's launcher says so for a reduction over an outer axis (column
  // tiles) of at least kOpsBeforeColumnKernelElements elements while its kernel is compiling:
  // the interpreter's column walk takes 1.0-1.5x the unfused ops' time (norm_bench: it folds
  // each column into its own accumulator, a step at a time), the other walks less than theirs.
  // It asks for the kernel as launch() would, so a later launch finds it. Launches nothing.
  virtual bool ops_are_faster(const FusedProgram& program, const ProgramFacts& facts,
                              const Shape& shape, std::span<const LaunchOperand> inputs,
                              std::span<const LaunchOperand> outputs,
                              std::span<const std::int64_t> scalars) {
    (void)program, (void)facts, (void)shape, (void)inputs, (void)outputs, (void)scalars;
    return false;
  }

  // The launch as a RowKernel, or null where this launcher has none for it now: a reduction over
  // the innermost dimension walked by rows, whose compiled kernel is ready (one is asked for as
  // launch() would: a later call finds it). `buffered` indexes inputs then outputs; each
  // buffered operand's handle is only looked at for its strides (its storage may be empty), which
  // must lay it out contiguously over `shape`.
  virtual std::unique_ptr<RowKernel> row_kernel(const FusedProgram& program,
                                                const ProgramFacts& facts, const Shape& shape,
                                                std::span<const LaunchOperand> inputs,
                                                std::span<const LaunchOperand> outputs,
                                                std::span<const std::int64_t> scalars,
                                                std::span<const int> buffered) {
    (void)program, (void)facts, (void)shape, (void)inputs, (void)outputs, (void)scalars,
        (void)buffered;
    return nullptr;
  }

  // True for a launcher with no fallback, whose launch() throws when a kernel cannot be built
  // (CUDA); the CPU's interprets instead and never throws for that.
  virtual bool may_fail() const { return false; }
  // Makes sure launch() with these arguments finds its kernel (building it if need be), or
  // throws what launch() would throw. Launches nothing.
  virtual void require(const FusedProgram& program, const ProgramFacts& facts, const Shape& shape,
                       std::span<const LaunchOperand> inputs,
                       std::span<const LaunchOperand> outputs,
                       std::span<const std::int64_t> scalars) {
    (void)program, (void)facts, (void)shape, (void)inputs, (void)outputs, (void)scalars;
  }

  // Takes up the settings that concern launches: the threads a kernel may use, and whether
  // kernels are compiled (else interpreted, where the launcher can).
  virtual void configure(int num_threads, bool compile) { (void)num_threads, (void)compile; }
  struct Counts {
    std::uint64_t compiled = 0;     // launches that ran a compiled kernel
    std::uint64_t interpreted = 0;  // launches that ran the interpreter
  };
  virtual Counts counts() const { return {}; }
};

}  // namespace streamfuse::jit
