// KernelLauncher: runs a FusedProgram over tensors of one device, as a compiled kernel when one
// is ready and through the interpreter otherwise.
#pragma once

#include <cstdint>
#include <span>

#include "backends/backend.h"
#include "jit/program.h"

namespace streamfuse::jit {

struct LaunchOperand {
  const backends::TensorHandle* handle = nullptr;
  Shape shape;  // inputs broadcast to the launch shape; outputs have it
  DType dtype = kF32;
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
