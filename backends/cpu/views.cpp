#include "backends/cpu/views.h"

#include "backends/backend.h"

namespace streamfuse::backends::cpu {

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

Operand broadcast_operand(const TensorHandle& h, const Shape& shape, DType dtype,
                          const Shape& iterated) {
  return {element_ptr(h, dtype), dtype, broadcast_strides(shape, h.strides, iterated)};
}

}  // namespace streamfuse::backends::cpu
