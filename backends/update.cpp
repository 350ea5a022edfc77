#include "backends/update.h"

#include <cstdint>
#include <vector>

#include "backends/index_layout.h"
#include "backends/movement.h"

namespace streamfuse::backends {

namespace {

// IndexPut's indices, read on the host (a sync point on a device that queues) and checked before
// anything is claimed or written; their bytes, of op.inputs[1]'s dtype.
std::vector<char> checked_indices(Backend& backend, const core::OpDesc& op, const TensorHandle& h) {
  const core::TensorDesc& id = op.inputs[1];
  std::vector<char> indices(static_cast<std::size_t>(id.shape.numel()) * element_size(id.dtype));
  if (!indices.empty()) backend.to_host(h, id.dtype, id.shape, indices.data());
  check_indices(op, indices.data());
  return indices;
}

}  // namespace

namespace {

// Whether distinct elements of `h` (of `shape`) are distinct memory: views are made by reshape,
// permute, slice and expand, and only expand's stride-0 dimensions make elements share memory.
bool elements_distinct(const TensorHandle& h, const Shape& shape) {
  for (int d = 0; d < shape.rank(); ++d)
    if (shape[d] > 1 && h.strides[static_cast<std::size_t>(d)] == 0) return false;
  return true;
}

}  // namespace

TensorHandle claim_or_copy(Backend& backend, const core::TensorDesc& xd, const TensorHandle& x) {
  // A broadcast view (expand) of memory nothing else holds is still not writable in place: a
  // write to one of its elements would change every element sharing that memory.
  if (xd.status == core::TensorStatus::kReadWrite && x.storage.may_overwrite() &&
      elements_distinct(x, xd.shape)) {
    backend.overwrite(x);
    return x;
  }
  return copy_contiguous(backend, x, xd.shape, xd.dtype, xd.dtype);
}

void run_update(Backend& backend, const core::OpDesc& op, std::span<TensorHandle> inputs,
                TensorHandle& out) {
  const core::TensorDesc& xd = op.inputs[0];
  std::vector<char> indices;
  if (op.kind == core::OpKind::kIndexPut) indices = checked_indices(backend, op, inputs[1]);
  // Claimed, only the slice is written (a KV cache appends its new rows only).
  out = claim_or_copy(backend, xd, inputs[0]);
  const auto axis = static_cast<std::size_t>(op.attrs.axis);
  if (op.kind == core::OpKind::kSliceUpdate) {
    const core::TensorDesc& sd = op.inputs[1];
    if (sd.shape.numel() == 0) return;
    TensorHandle slice = out;  // the part of the result src replaces
    slice.offset += op.scalars[0].to_int() * out.strides[axis];
    backend.copy(sd.shape, inputs[1], sd.dtype, slice, xd.dtype);
    return;
  }
  // IndexPut: one slice copied per index, in order (a repeated index: the last one's).
  const core::TensorDesc& src = op.inputs[2];
  Shape row = src.shape;  // one slice: src's shape with the axis 1
  row[op.attrs.axis] = 1;
  if (row.numel() == 0) return;
  const DType index_dtype = op.inputs[1].dtype;
  for (std::int64_t j = 0; j < op.inputs[1].shape.numel(); ++j) {
    TensorHandle to = out, from = inputs[2];
    to.offset += index_value(indices.data(), index_dtype, j) * out.strides[axis];
    from.offset += j * from.strides[axis];
    backend.copy(row, from, src.dtype, to, xd.dtype);
  }
}

}  // namespace streamfuse::backends
