#include "backends/update.h"

#include "backends/movement.h"

namespace streamfuse::backends {

void run_update(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
                TensorHandle& out) {
  const core::TensorDesc& xd = op.inputs[0];
  const core::TensorDesc& sd = op.inputs[1];
  // The last use of x, whose memory nothing else shares: its elements outside the slice are
  // already the result's, so only the slice is written (a KV cache appends its new rows only).
  if (xd.status == core::TensorStatus::kReadWrite && inputs[0].storage.may_overwrite()) {
    backend.overwrite(inputs[0]);
    out = inputs[0];
  } else {
    out = copy_contiguous(backend, inputs[0], xd.shape, xd.dtype, xd.dtype);
  }
  if (sd.shape.numel() == 0) return;
  TensorHandle slice = out;  // the part of the result src replaces
  const auto axis = static_cast<std::size_t>(op.attrs.axis);
  slice.offset += op.scalars[0].to_int() * out.strides[axis];
  backend.copy(sd.shape, inputs[1], sd.dtype, slice, xd.dtype);
}

}  // namespace streamfuse::backends
