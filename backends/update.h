// Ops that replace part of a tensor (core/ir.h: SliceUpdate, IndexPut; Scatter and ScatterAdd
// run by each backend's kernel), in the input's own memory when the op holds its last
// reference, else in a copy.
#pragma once

#include <span>

#include "backends/backend.h"
#include "core/ir.h"

namespace streamfuse::backends {

// x's handle itself when this op holds its last reference and nothing else shares its memory
// (the op may then write it in place: its other elements are already the result's), else a new
// contiguous copy of x.
TensorHandle claim_or_copy(Backend& backend, const core::TensorDesc& xd, const TensorHandle& x);

// SliceUpdate and IndexPut, through the backend's copy kernel.
void run_update(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
                TensorHandle& out);

}  // namespace streamfuse::backends
