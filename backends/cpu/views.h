// Kernel operands of the CPU's kernels from tensor handles (the view arithmetic itself is
// backends/views.h).
#pragma once

#include <optional>

#include "backends/backend.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/views.h"
#include "streamfuse/shape.h"

namespace streamfuse::backends::cpu {

// A kernel operand for tensor (`h`, `shape`, `dtype`) read over `iterated` (broadcast to it).
Operand broadcast_operand(const TensorHandle& h, const Shape& shape, DType dtype,
                          const Shape& iterated);

}  // namespace streamfuse::backends::cpu
