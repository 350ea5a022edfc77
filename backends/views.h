// Stride arithmetic for movement ops that need no copy, shared by every backend: a view is the
// same memory under other strides, whatever device holds it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "backends/backend.h"
#include "core/ir.h"
#include "streamfuse/shape.h"

namespace streamfuse::backends {

using Strides = std::array<std::int64_t, kMaxRank>;

// Strides that show the elements of (`from`, `strides`) in row-major order as shape `to` (same
// numel), or nothing when the layout would need a copy.
std::optional<Strides> reshape_strides(const Shape& from, const Strides& strides, const Shape& to);
// The strides of (`in`, `strides`) broadcast to `out` (aligned at the right): 0 along
// dimensions it does not have or has as size 1.
Strides broadcast_strides(const Shape& in, const Strides& strides, const Shape& out);

// The address of a handle's first element (a host or a device address).
char* element_ptr(const TensorHandle& h, DType dtype);

// The result of movement op `op` over its input `in` as a view of the same memory, or nullopt
// when it needs new memory: a reshape the layout cannot show, contiguous() of a strided input,
// and cat.
std::optional<TensorHandle> view_of(const core::OpDesc& op, const TensorHandle& in);

}  // namespace streamfuse::backends
