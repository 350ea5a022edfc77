// The CUDA KernelLauncher of one device: takes the launch's specialization key, waits for the
// kernel (a GPU has no interpreter to fall back on: the first launch of a new kernel waits for
// NVRTC, later processes load it from the cache directory), and launches it on the calling
// thread's CUDA stream (`stream_of()`), asynchronously.
#pragma once

#include <cuda.h>

#include <atomic>
#include <functional>
#include <memory>

#include "backends/cuda/context.h"
#include "jit/kernel_cache.h"
#include "jit/launcher.h"

namespace streamfuse::jit {

class CudaLauncher final : public KernelLauncher {
 public:
  // `cache` builds with a CudaToolchain of `device`; `stream_of` gives the CUDA stream work of the
  // calling thread goes to.
  CudaLauncher(std::shared_ptr<const backends::cuda::DeviceContext> device, KernelCache& cache,
               std::function<CUstream()> stream_of);

  // Throws Error naming the program when its kernel cannot be built (the cache has warned with
  // the compiler's message) or the driver refuses the launch.
  void launch(const FusedProgram& program, const ProgramFacts& facts, const Shape& shape,
              std::span<const LaunchOperand> inputs, std::span<const LaunchOperand> outputs,
              std::span<const std::int64_t> scalars) override;

  bool may_fail() const override { return true; }
  void require(const FusedProgram& program, const ProgramFacts& facts, const Shape& shape,
               std::span<const LaunchOperand> inputs, std::span<const LaunchOperand> outputs,
               std::span<const std::int64_t> scalars) override;

  std::uint64_t launches() const { return launches_.load(std::memory_order_relaxed); }
  Counts counts() const override { return {launches(), 0}; }

 private:
  struct Prepared;
  // The merged iteration, operands and kernel of a launch (no kernel: an empty iteration).
  // Throws Error naming the program when the kernel cannot be built.
  Prepared prepare(const FusedProgram& program, const ProgramFacts& facts, const Shape& shape,
                   std::span<const LaunchOperand> inputs, std::span<const LaunchOperand> outputs,
                   std::span<const std::int64_t> scalars);

  std::shared_ptr<const backends::cuda::DeviceContext> device_;
  KernelCache& cache_;
  std::function<CUstream()> stream_of_;
  std::atomic<std::uint64_t> launches_{0};
};

}  // namespace streamfuse::jit
