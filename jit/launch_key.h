// The SpecializationKey of one launch, from its merged iteration: per operand the stride class of
// each merged dimension, outputs that write over an input in place, and what the scalar values
// allow (equal classes, exact reciprocals). The same for every target (CPU and CUDA launchers).
#pragma once

#include <cstdint>
#include <span>

#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/layout.h"
#include "jit/launcher.h"
#include "jit/program.h"
#include "jit/specialization.h"

namespace streamfuse::jit {

// `ops` holds the launch's inputs then outputs, as broadcast to the iteration `it`.
SpecializationKey launch_key(const FusedProgram& program, const ProgramFacts& facts,
                             const backends::cpu::Iteration& it,
                             std::span<const backends::cpu::Operand> ops,
                             std::span<const LaunchOperand> inputs,
                             std::span<const LaunchOperand> outputs,
                             std::span<const std::int64_t> scalars);

}  // namespace streamfuse::jit
