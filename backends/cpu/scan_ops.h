// The CPU's scans (core/ir.h: Cumsum, Argsort): each line along the axis on one thread, lines
// spread over the backend's threads.
#pragma once

#include <span>

#include "backends/backend.h"

namespace streamfuse::backends::cpu {

// Runs `op` over inputs[0] (any layout) into `out` (new, contiguous).
void run_scan(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
              TensorHandle& out, int num_threads);

}  // namespace streamfuse::backends::cpu
