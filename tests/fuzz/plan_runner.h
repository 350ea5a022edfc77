// Runs a plan's optimization the way the processor runs a matched plan, on a segment made from
// the plan's own ops (relative size ids become small sizes, placeholders become scalar values),
// with the CPU backend and the interpreter. Everything it sees is checked, and any breach aborts:
// it reads only tensors that exist (before the segment, or written earlier in the run), kernel
// operands fit their buffers (a lent buffer included: the caching allocator's size classes hide
// small overruns from AddressSanitizer), and it publishes and erases only what the segment makes
// and ends.
#pragma once

#include <functional>
#include <span>

#include "fusion/plan.h"
#include "jit/launcher.h"

namespace streamfuse::fuzz {

// Called at each launch, after its operands were checked.
using LaunchObserver = std::function<void(
    const jit::FusedProgram& program, const jit::ProgramFacts& facts, const Shape& shape,
    std::span<const jit::LaunchOperand> inputs, std::span<const jit::LaunchOperand> outputs,
    std::span<const std::int64_t> scalars)>;

// Runs `plan`'s optimization, if any, and returns true; false when it has none or its segment
// would be too large to run cheaply. Aborts on anything a built plan would not do.
bool run_plan(const fusion::ExecutionPlan& plan, const LaunchObserver& observe = {});

}  // namespace streamfuse::fuzz
