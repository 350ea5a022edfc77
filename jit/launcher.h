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
  // Computes `program` over `shape`. scalars[i] is jit::scalar_bits of argument i. Never throws
  // for a kernel that failed to compile (it interprets instead).
  virtual void launch(const FusedProgram& program, const ProgramFacts& facts, const Shape& shape,
                      std::span<const LaunchOperand> inputs, std::span<const LaunchOperand> outputs,
                      std::span<const std::int64_t> scalars) = 0;
};

}  // namespace streamfuse::jit
