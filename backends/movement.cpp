#include "backends/movement.h"

#include <string>

#include "backends/views.h"
#include "streamfuse/error.h"

namespace streamfuse::backends {

TensorHandle copy_contiguous(Backend& backend, const TensorHandle& h, const Shape& shape,
                             DType from, DType to) {
  TensorHandle out = backend.allocate(shape, to);
  if (shape.numel() > 0) backend.copy(shape, h, from, out, to);
  return out;
}

TensorHandle contiguous_or_copy(Backend& backend, const TensorHandle& h, const Shape& shape,
                                DType dtype) {
  return is_contiguous(h, shape) ? h : copy_contiguous(backend, h, shape, dtype, dtype);
}

void run_movement(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
                  TensorHandle& out) {
  const core::TensorDesc& id = op.inputs[0];
  const core::TensorDesc& od = op.outputs[0];
  TensorHandle& in = inputs[0];
  if (std::optional<TensorHandle> view = view_of(op, in)) {
    out = std::move(*view);
    return;
  }
  switch (op.kind) {
    case core::OpKind::kReshape:  // a layout the new shape cannot show: copied first
      out = copy_contiguous(backend, in, id.shape, id.dtype, id.dtype);
      out.strides = contiguous_strides(od.shape);
      return;
    case core::OpKind::kCopy:
      out = copy_contiguous(backend, in, id.shape, id.dtype, id.dtype);
      return;
    case core::OpKind::kCat: {
      out = backend.allocate(od.shape, od.dtype);
      const auto axis = static_cast<std::size_t>(op.attrs.axis);
      std::int64_t along = 0;
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        const core::TensorDesc& d = op.inputs[i];
        TensorHandle part = out;  // the slice of the output this input fills
        part.offset = along * out.strides[axis];
        if (d.shape.numel() > 0) backend.copy(d.shape, inputs[i], d.dtype, part, od.dtype);
        along += d.shape[static_cast<int>(axis)];
      }
      return;
    }
    default:
      throw Error("internal error: " + std::string(core::op_name(op.kind)) +
                  " is not a movement op; please report this");
  }
}

}  // namespace streamfuse::backends
