// Stride arithmetic for movement ops that need no copy.
#pragma once

#include <optional>

#include "backends/backend.h"
#include "backends/cpu/kernels/kernels.h"
#include "streamfuse/shape.h"

namespace streamfuse::backends::cpu {

// Strides that show the elements of (`from`, `strides`) in row-major order as shape `to` (same
// numel), or nothing when the layout would need a copy.
std::optional<Strides> reshape_strides(const Shape& from, const Strides& strides, const Shape& to);
// The strides of (`in`, `strides`) broadcast to `out` (aligned at the right): 0 along
// dimensions it does not have or has as size 1.
Strides broadcast_strides(const Shape& in, const Strides& strides, const Shape& out);

// The address of a handle's first element.
char* element_ptr(const TensorHandle& h, DType dtype);
// A kernel operand for tensor (`h`, `shape`, `dtype`) read over `iterated` (broadcast to it).
Operand broadcast_operand(const TensorHandle& h, const Shape& shape, DType dtype,
                          const Shape& iterated);

}  // namespace streamfuse::backends::cpu
