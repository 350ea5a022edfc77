#include "backends/views.h"

namespace streamfuse::backends {

// Walks `from` in chunks of dimensions that are contiguous with each other, and lays the
// dimensions of `to` over each chunk (the rule PyTorch's view() uses).
std::optional<Strides> reshape_strides(const Shape& from, const Strides& strides, const Shape& to) {
  if (from.rank() == 0 || from.numel() == 0) return contiguous_strides(to);
  Strides out{};
  int view_d = to.rank() - 1;
  std::int64_t chunk_base = strides[static_cast<std::size_t>(from.rank() - 1)];
  std::int64_t tensor_numel = 1, view_numel = 1;
  for (int d = from.rank() - 1; d >= 0; --d) {
    tensor_numel *= from[d];
    const bool chunk_ends =
        d == 0 ||
        (from[d - 1] != 1 && strides[static_cast<std::size_t>(d - 1)] != tensor_numel * chunk_base);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || to[view_d] == 1)) {
      out[static_cast<std::size_t>(view_d)] = view_numel * chunk_base;
      view_numel *= to[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_base = strides[static_cast<std::size_t>(d - 1)];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

Strides broadcast_strides(const Shape& in, const Strides& strides, const Shape& out) {
  Strides s{};
  const int lead = out.rank() - in.rank();
  for (int d = 0; d < in.rank(); ++d)
    s[static_cast<std::size_t>(d + lead)] = in[d] == 1 ? 0 : strides[static_cast<std::size_t>(d)];
  return s;
}

char* element_ptr(const TensorHandle& h, DType dtype) {
  return static_cast<char*>(h.storage.data()) +
         h.offset * static_cast<std::int64_t>(element_size(dtype));
}

std::optional<TensorHandle> view_of(const core::OpDesc& op, const TensorHandle& in) {
  const core::TensorDesc& id = op.inputs[0];
  const core::TensorDesc& od = op.outputs[0];
  TensorHandle out = in;
  switch (op.kind) {
    case core::OpKind::kReshape: {
      const std::optional<Strides> strides = reshape_strides(id.shape, in.strides, od.shape);
      if (!strides) return std::nullopt;
      out.strides = *strides;
      return out;
    }
    case core::OpKind::kPermute:
      for (int d = 0; d < od.shape.rank(); ++d)
        out.strides[static_cast<std::size_t>(d)] =
            in.strides[static_cast<std::size_t>(op.attrs.perm[static_cast<std::size_t>(d)])];
      return out;
    case core::OpKind::kExpand:
      out.strides = broadcast_strides(id.shape, in.strides, od.shape);
      return out;
    case core::OpKind::kSlice: {
      const auto axis = static_cast<std::size_t>(op.attrs.axis);
      out.offset += op.scalars[0].to_int() * in.strides[axis];
      out.strides[axis] *= op.scalars[1].to_int();
      return out;
    }
    case core::OpKind::kCopy:
      if (is_contiguous(in, id.shape)) return out;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace streamfuse::backends
