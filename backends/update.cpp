#include "backends/update.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/index_layout.h"
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
  const auto axis = static_cast<std::size_t>(op.attrs.axis);
  if (op.kind == core::OpKind::kSliceUpdate) {
    if (sd.shape.numel() == 0) return;
    TensorHandle slice = out;  // the part of the result src replaces
    slice.offset += op.scalars[0].to_int() * out.strides[axis];
    backend.copy(sd.shape, inputs[1], sd.dtype, slice, xd.dtype);
    return;
  }
  // IndexPut: the indices read on the host (a sync point on a device that queues) and checked
  // before anything is written, then one slice copied per index, in order.
  const core::TensorDesc& id = op.inputs[1];
  const core::TensorDesc& src = op.inputs[2];
  const std::int64_t n = id.shape.numel();
  std::vector<std::int64_t> indices(static_cast<std::size_t>(n));
  if (id.dtype == kI64) {
    backend.to_host(inputs[1], kI64, id.shape, indices.data());
  } else {
    std::vector<std::int32_t> narrow(static_cast<std::size_t>(n));
    backend.to_host(inputs[1], kI32, id.shape, narrow.data());
    std::copy(narrow.begin(), narrow.end(), indices.begin());
  }
  const std::int64_t bad = first_bad_index(indices.data(), kI64, n, xd.shape[op.attrs.axis]);
  if (bad >= 0) throw_bad_index(op, bad, indices[static_cast<std::size_t>(bad)]);
  Shape row = src.shape;  // one slice: src's shape with the axis 1
  row[op.attrs.axis] = 1;
  if (row.numel() == 0) return;
  for (std::int64_t j = 0; j < n; ++j) {
    TensorHandle to = out, from = inputs[2];
    to.offset += indices[static_cast<std::size_t>(j)] * out.strides[axis];
    from.offset += j * from.strides[axis];
    backend.copy(row, from, src.dtype, to, xd.dtype);
  }
}

}  // namespace streamfuse::backends
