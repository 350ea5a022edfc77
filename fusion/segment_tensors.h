// What the kinds' execute() share about a segment's tensors: the tensor a TensorSource names (its
// op's output, or one of its inputs) in global form, a product's operands, and the last uses an
// op ends.
#pragma once

#include <array>
#include <cstddef>

#include "fusion/context.h"
#include "fusion/trace.h"

namespace streamfuse::fusion {

inline const core::TensorDesc& desc_at(ExecutionContext& context, TensorSource s) {
  const core::OpDesc& op = context.op(s.op);
  return s.slot < 0 ? op.outputs[0] : op.inputs[static_cast<std::size_t>(s.slot)];
}

// The handles of a product's two operands, as its execution reads them; on a failed one, sets
// *failure (and the rest are not read).
inline std::array<backends::TensorHandle, 2> product_operands(ExecutionContext& context,
                                                              const core::OpDesc& product,
                                                              core::Failure* failure) {
  std::array<backends::TensorHandle, 2> handles;
  for (std::size_t i = 0; i < 2 && !*failure; ++i)
    handles[i] = context.handle(product.inputs[i].id, failure);
  return handles;
}

// Forgets op's inputs whose last use it was, as running it on its own would.
inline void erase_last_uses(ExecutionContext& context, const core::OpDesc& op) {
  for (const core::TensorDesc& in : op.inputs)
    if (in.status == core::TensorStatus::kReadWrite) context.erase(in.id);
}

}  // namespace streamfuse::fusion
