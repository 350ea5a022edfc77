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

namespace {

// Whether every one of n indices of type T lies in [0, size): their smallest and largest, in a
// loop the compiler vectorizes (the check runs before every gather, fused or not).
template <class T>
bool all_in_range(const T* v, std::int64_t n, std::int64_t size) {
  if (n == 0) return true;
  T lo = v[0], hi = v[0];
  for (std::int64_t i = 1; i < n; ++i) {
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
  }
  return lo >= 0 && static_cast<std::int64_t>(hi) < size;
}

}  // namespace

void check_indices(const core::OpDesc& op, const void* indices) {
  const core::TensorDesc& id = op.inputs[1];
  const std::int64_t size = op.inputs[0].shape[op.attrs.axis];
  const std::int64_t n = id.shape.numel();
  if (id.dtype == kI32 ? all_in_range(static_cast<const std::int32_t*>(indices), n, size)
                       : all_in_range(static_cast<const std::int64_t*>(indices), n, size))
    return;
  // The first one out of range, for the message.
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
