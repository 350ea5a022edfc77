// Ops that replace part of a tensor (core/ir.h: SliceUpdate, IndexPut), on any backend through
// its copy kernel: in the input's own memory when the op holds its last reference, else in a
// copy.
#pragma once

#include <span>

#include "backends/backend.h"
#include "core/ir.h"

namespace streamfuse::backends {

void run_update(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
                TensorHandle& out);

}  // namespace streamfuse::backends
