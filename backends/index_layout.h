// What the kernels of index ops (core/ir.h: IndexSelect, Gather, IndexPut) need on every device:
// their extents, the indices' values, and the check of those values with the error an
// out-of-range one raises.
#pragma once

#include <cstdint>

#include "core/ir.h"

namespace streamfuse::backends {

// IndexSelect as three nested extents, in elements: out[o][j][i] = x[o][indices[j]][i] for o
// below outer, j below count (the indices' elements), i below inner; x's axis has axis_size.
struct IndexSelectLayout {
  std::int64_t outer = 1, axis_size = 0, count = 0, inner = 1;
};
IndexSelectLayout index_select_layout(const core::OpDesc& op);

// Index i of contiguous i32 or i64 `indices`, as an int64.
std::int64_t index_value(const void* indices, DType dtype, std::int64_t i);

// Checks op's indices (op.inputs[1], contiguous in host memory at `indices`) against x's axis
// (op.inputs[0], op.attrs.axis): throws the op's Error for the first one outside [0, size), naming
// its value, its position and the valid range.
void check_indices(const core::OpDesc& op, const void* indices);

}  // namespace streamfuse::backends
