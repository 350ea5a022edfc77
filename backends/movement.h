// Movement ops on any backend: views where the layout allows (backends/views.h), otherwise copies
// through the backend's own Backend::copy, so each backend supplies only the copy kernel.
#pragma once

#include <span>

#include "backends/backend.h"
#include "core/ir.h"

namespace streamfuse::backends {

// A new contiguous tensor of `backend` holding (`h`, `shape`) converted from `from` to `to`
// (equal dtypes: a bitwise copy).
TensorHandle copy_contiguous(Backend& backend, const TensorHandle& h, const Shape& shape,
                             DType from, DType to);
// `h` itself when it lays out `shape` densely in row-major order, else a contiguous copy (for
// kernels that read their operands contiguous).
TensorHandle contiguous_or_copy(Backend& backend, const TensorHandle& h, const Shape& shape,
                                DType dtype);

// Runs movement op `op` (reshape, permute, expand, slice, contiguous, cat) over `inputs`.
void run_movement(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
                  TensorHandle& out);

}  // namespace streamfuse::backends
