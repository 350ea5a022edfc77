// What the kernels of index ops (core/ir.h: IndexSelect, Gather) need on every device: their
// extents, and the check of the indices' values with the error an out-of-range one raises.
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

// The position of the first of the n indices (contiguous, i32 or i64) outside [0, size), or -1.
std::int64_t first_bad_index(const void* indices, DType dtype, std::int64_t n, std::int64_t size);

// Throws the Error of `op` (IndexSelect or Gather) for the index `value` at flat position
// `position` of its indices: it names the value, its position and the axis' size.
[[noreturn]] void throw_bad_index(const core::OpDesc& op, std::int64_t position,
                                  std::int64_t value);

}  // namespace streamfuse::backends
