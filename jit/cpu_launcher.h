// The CPU's KernelLauncher: takes the launch's specialization key, runs the compiled kernel from
// the kernel cache over all cores when it is ready, and the interpreter otherwise.
#pragma once

#include <atomic>

#include "backends/cpu/kernels/kernels.h"
#include "jit/kernel_cache.h"
#include "jit/launcher.h"

namespace streamfuse::jit {

class CpuLauncher final : public KernelLauncher {
 public:
  // `cache` may be null: everything is interpreted.
  CpuLauncher(const backends::cpu::KernelTable& kernels, KernelCache* cache);

  void launch(const FusedProgram& program, const ProgramFacts& facts, const Shape& shape,
              std::span<const LaunchOperand> inputs, std::span<const LaunchOperand> outputs,
              std::span<const std::int64_t> scalars) override;

  // Column walks of at least this many elements run as ops until their kernel is compiled.
  static constexpr std::int64_t kOpsBeforeColumnKernelElements = std::int64_t{1} << 16;
  bool ops_are_faster(const FusedProgram& program, const ProgramFacts& facts, const Shape& shape,
                      std::span<const LaunchOperand> inputs, std::span<const LaunchOperand> outputs,
                      std::span<const std::int64_t> scalars) override;

  std::unique_ptr<RowKernel> row_kernel(const FusedProgram& program, const ProgramFacts& facts,
                                        const Shape& shape, std::span<const LaunchOperand> inputs,
                                        std::span<const LaunchOperand> outputs,
                                        std::span<const std::int64_t> scalars,
                                        std::span<const int> buffered) override;

  void set_num_threads(int n) { num_threads_.store(n, std::memory_order_relaxed); }
  // Off: interpret everything (STREAMFUSE_JIT=interpret), whatever the cache holds.
  void set_compile(bool on) { compile_.store(on, std::memory_order_relaxed); }
  // Launches that ran a compiled kernel / the interpreter (for tests and logs).
  std::uint64_t compiled_launches() const { return compiled_.load(std::memory_order_relaxed); }
  std::uint64_t interpreted_launches() const {
    return interpreted_.load(std::memory_order_relaxed);
  }
  void configure(int num_threads, bool compile) override {
    set_num_threads(num_threads);
    set_compile(compile);
  }
  Counts counts() const override { return {compiled_launches(), interpreted_launches()}; }

 private:
  // A program with a reduction anchor (jit/reduce_layout.h), over operands broadcast to `shape`.
  void launch_reduce(const FusedProgram& program, const ProgramFacts& facts, const Shape& shape,
                     std::span<const backends::cpu::Operand> ops,
                     std::span<const LaunchOperand> inputs, std::span<const LaunchOperand> outputs,
                     std::span<const std::int64_t> scalars);

  const backends::cpu::KernelTable& kernels_;
  KernelCache* cache_;
  std::atomic<int> num_threads_{0};
  std::atomic<bool> compile_{true};
  std::atomic<std::uint64_t> compiled_{0}, interpreted_{0};
};

}  // namespace streamfuse::jit
