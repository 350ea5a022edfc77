// Runs one op eagerly through the backend: the Operations strategy, the "fusion off" path and
// the reference the fused paths are tested against.
#pragma once

#include "backends/backend.h"
#include "core/ir.h"
#include "stream/handles.h"

namespace streamfuse::stream {

// Takes the op's inputs from `handles`, runs it on `backend` and stores its outputs. A failure
// (of this op or of an input's) is stored as the outputs' failure, logged once, and raised when
// something reads them; it never throws for that.
void execute_op(const core::OpDesc& op, HandleContainer& handles, backends::Backend& backend);

}  // namespace streamfuse::stream
