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

namespace {
template <class T>
std::int64_t first_bad(const T* p, std::int64_t n, std::int64_t size) {
  for (std::int64_t i = 0; i < n; ++i)
    if (p[i] < 0 || static_cast<std::int64_t>(p[i]) >= size) return i;
  return -1;
}
}  // namespace

std::int64_t first_bad_index(const void* indices, DType dtype, std::int64_t n, std::int64_t size) {
  return dtype == kI32 ? first_bad(static_cast<const std::int32_t*>(indices), n, size)
                       : first_bad(static_cast<const std::int64_t*>(indices), n, size);
}

void throw_bad_index(const core::OpDesc& op, std::int64_t position, std::int64_t value) {
  const Shape& indices = op.inputs[1].shape;
  // The position as coordinates of the indices tensor.
  std::string at;
  std::int64_t rest = position;
  for (int d = indices.rank() - 1; d >= 0; --d) {
    const std::string c = std::to_string(indices[d] > 0 ? rest % indices[d] : 0);
    at = d == indices.rank() - 1 ? c : c + ", " + at;
    if (indices[d] > 0) rest /= indices[d];
  }
  const std::int64_t size = op.inputs[0].shape[op.attrs.axis];
  throw Error(std::string(core::op_name(op.kind)) + ": index " + std::to_string(value) + " at [" +
              at + "] of the " + (op.kind == core::OpKind::kGather ? "index" : "indices") +
              " is out of range for axis " + std::to_string(op.attrs.axis) + " of size " +
              std::to_string(size) + " (valid: 0 to " + std::to_string(size - 1) + ")");
}

}  // namespace streamfuse::backends
