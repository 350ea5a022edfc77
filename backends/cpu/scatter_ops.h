// The CPU's Scatter and ScatterAdd (core/ir.h): the index checked, then x claimed (its last use)
// or copied, then src's elements written line by line (backends/update.h's order).
#pragma once

#include <span>

#include "backends/backend.h"

namespace streamfuse::backends::cpu {

// Runs `op` over `inputs` (x, index, src: any layout) into `out`, with up to `num_threads`
// threads. Throws Error naming the first index out of range, before anything is written.
void run_scatter(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
                 TensorHandle& out, int num_threads);

}  // namespace streamfuse::backends::cpu
