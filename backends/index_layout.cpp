#include "backends/index_layout.h"

#include <string>

#include "streamfuse/error.h"

namespace streamfuse::backends {

IndexSelectLayout index_select_layout(const core::OpDesc& op) {
  const Shape& x = op.inputs[0].shape;
  const int axis = op.attrs.axis;
  IndexSelectLayout l;
  for (int d = 0; d < axis; ++d) l.outer *= x[d];
  l.axis_size = x[axis];
  l.count = op.inputs[1].shape.numel();
  for (int d = axis + 1; d < x.rank(); ++d) l.inner *= x[d];
  return l;
}

std::int64_t index_value(const void* indices, DType dtype, std::int64_t i) {
  return dtype == kI32 ? static_cast<const std::int32_t*>(indices)[i]
                       : static_cast<const std::int64_t*>(indices)[i];
}

void check_indices(const core::OpDesc& op, const void* indices) {
  const core::TensorDesc& id = op.inputs[1];
  const std::int64_t size = op.inputs[0].shape[op.attrs.axis];
  const std::int64_t n = id.shape.numel();
  std::int64_t position = 0;
  while (position < n) {
    const std::int64_t v = index_value(indices, id.dtype, position);
    if (v < 0 || v >= size) break;
    ++position;
  }
  if (position == n) return;
  // The position as coordinates of the indices tensor.
  std::string at;
  std::int64_t rest = position;
  for (int d = id.shape.rank() - 1; d >= 0; --d) {
    const std::string c = std::to_string(rest % id.shape[d]);
    at = d == id.shape.rank() - 1 ? c : c + ", " + at;
    rest /= id.shape[d];
  }
  throw Error(
      std::string(core::op_name(op.kind)) + ": index " +
      std::to_string(index_value(indices, id.dtype, position)) + " at [" + at + "] of the " +
      (op.kind == core::OpKind::kIndexSelect || op.kind == core::OpKind::kIndexPut ? "indices"
                                                                                   : "index") +
      " is out of range for axis " + std::to_string(op.attrs.axis) + " of size " +
      std::to_string(size) + " (valid: 0 to " + std::to_string(size - 1) + ")");
}

}  // namespace streamfuse::backends
