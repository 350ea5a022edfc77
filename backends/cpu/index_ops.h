// The CPU's index ops (core/ir.h: IndexSelect, Gather): indices checked, then rows or elements
// copied on the backend's threads.
#pragma once

#include <span>

#include "backends/backend.h"

namespace streamfuse::backends::cpu {

// Runs `op` over `inputs` (x, indices: any layout) into `out` (new, contiguous), with up to
// `num_threads` threads. Throws Error naming the first index out of range, before writing.
void run_index(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
               TensorHandle& out, int num_threads);

}  // namespace streamfuse::backends::cpu
