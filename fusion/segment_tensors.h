// The tensor a TensorSource names in the segment an optimization runs on (its op's output, or
// one of its inputs), in global form: what every kind's execute() reads ids and shapes from.
#pragma once

#include <cstddef>

#include "fusion/context.h"
#include "fusion/trace.h"

namespace streamfuse::fusion {

inline const core::TensorDesc& desc_at(ExecutionContext& context, TensorSource s) {
  const core::OpDesc& op = context.op(s.op);
  return s.slot < 0 ? op.outputs[0] : op.inputs[static_cast<std::size_t>(s.slot)];
}

}  // namespace streamfuse::fusion
