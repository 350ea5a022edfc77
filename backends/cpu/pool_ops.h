// The CPU's 2-D pools (core/ir.h: MaxPool2d, AvgPool2d), in PyTorch's arithmetic: the window's
// elements in row-major order, an average summed in f32 and divided once. The CUDA library
// kernels (jit/cuda_library_source.cpp) do the same, so both give the same bits.
#pragma once

#include <span>

#include "backends/backend.h"

namespace streamfuse::backends::cpu {

// Runs pool `op` over inputs[0] (any layout) into `out` (new, contiguous).
void run_pool(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
              TensorHandle& out, int num_threads);

}  // namespace streamfuse::backends::cpu
